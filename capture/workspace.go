package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// Errors returned for paths ckpt refuses. Callers test them with errors.Is.
var (
	// ErrOutsideWorkspace is wrapped when a path resolves outside the
	// workspace root, directly or through a symlinked parent.
	ErrOutsideWorkspace = errors.New("path is outside the workspace")
	// ErrSymlink is wrapped when the path itself, or a parent directory at
	// restore time, is a symbolic link.
	ErrSymlink = errors.New("path is a symbolic link")
	// ErrNotRegular is wrapped when the path is a directory, device, socket
	// or pipe, or a parent of it is not a directory.
	ErrNotRegular = errors.New("path is not a regular file")
	// ErrVCSDir is wrapped when the path lies inside a version-control
	// directory such as .git.
	ErrVCSDir = errors.New("path is inside a version-control directory")
)

// Workspace is the directory tree an agent edits. Every access to its
// files goes through one os.Root opened on its root (see the package doc).
// It is safe for concurrent use; Close releases the handle.
type Workspace struct {
	root  string   // absolute, symlinks resolved
	given string   // absolute, as given (may differ when the root is reached via a link)
	dir   *os.Root // the root handle
	// syncDir fsyncs an open directory, syncFS a whole file system
	// (Barrier); seams for tests.
	syncDir, syncFS func(*os.File) error
}

// NewWorkspace returns the workspace rooted at dir, which must be an existing
// directory, holding a handle on it until Close.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("capture: workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("capture: workspace %s: %w", dir, err)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("capture: workspace %s: %w", dir, err)
	}
	return &Workspace{root: real, given: filepath.Clean(abs), dir: r, syncDir: syncDir, syncFS: syncfs}, nil
}

// Close releases the workspace's root handle. Calls after it fail.
func (w *Workspace) Close() error { return w.dir.Close() }

// Root returns the workspace's absolute root, symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// Abs returns the absolute file-system path of a canonical relative path,
// for showing to people. ckpt itself never opens it: every access goes
// through the root handle.
func (w *Workspace) Abs(rel string) string { return filepath.Join(w.root, filepath.FromSlash(rel)) }

// Rel resolves p (absolute, or relative to the workspace root) to its
// canonical workspace-relative path. Symlinked parent directories are
// resolved, through the root handle, and must stay inside the workspace;
// the last element is not followed. It fails with ErrOutsideWorkspace or
// ErrVCSDir (any element naming a VCS directory, in any case), or
// ErrConfig (agent or ckpt configuration, see configPaths).
func (w *Workspace) Rel(p string) (string, error) { return w.rel(p, nil) }

// RelAll is Rel of each of ps, as of one moment: a directory several of
// them name is resolved once, not once per path (a capture of 2,000 files
// of Go's source names 110 directories). What it returns are names only;
// every access through them walks its path again without following links.
func (w *Workspace) RelAll(ps []string) ([]string, []error) {
	rels, errs := make([]string, len(ps)), make([]error, len(ps))
	dirs := map[string]resolved{}
	for i, p := range ps {
		rels[i], errs[i] = w.rel(p, dirs)
	}
	return rels, errs
}

// resolved is what resolveDir returned for a directory.
type resolved struct {
	real string
	err  error
}

// rel is Rel, looking each directory up in dirs first and keeping what it
// resolves there, when dirs is not nil.
func (w *Workspace) rel(p string, dirs map[string]resolved) (string, error) {
	if p == "" {
		return "", fmt.Errorf("capture: empty path")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.root, abs)
	}
	abs = filepath.Clean(abs)
	rel, ok := within(w.root, abs)
	if !ok {
		if rel, ok = within(w.given, abs); !ok {
			return "", fmt.Errorf("capture: %s: %w", p, ErrOutsideWorkspace)
		}
	}
	if rel == "." {
		return "", fmt.Errorf("capture: %s: %w", p, ErrNotRegular)
	}
	dir, base := path.Split(rel)
	r, ok := dirs[dir]
	if !ok {
		r.real, r.err = w.resolveDir(dir)
		if dirs != nil {
			dirs[dir] = r
		}
	}
	realDir, err := r.real, r.err
	if err != nil {
		return "", fmt.Errorf("capture: %s: %w", p, err)
	}
	out := path.Join(realDir, base)
	if err := protect(out); err != nil {
		return "", fmt.Errorf("capture: %s: %w", p, err)
	}
	return out, nil
}

// maxLinks bounds the symlinks resolveDir follows, as the kernel does.
const maxLinks = 40

var errTooManyLinks = errors.New("too many levels of symbolic links")

// resolveDir is resolveOnce, tried again when what it read changed under
// it (a directory swapped for a link between the Lstat and the Readlink);
// a path that keeps changing fails with errSwapped.
func (w *Workspace) resolveDir(dir string) (string, error) {
	var err error
	for range 3 {
		var out string
		out, err = w.resolveOnce(dir)
		if err == nil || errors.Is(err, ErrOutsideWorkspace) || errors.Is(err, fs.ErrPermission) || errors.Is(err, errTooManyLinks) {
			return out, err
		}
	}
	return "", fmt.Errorf("%w: %v", errSwapped, err)
}

// resolveOnce resolves the symlinks of the workspace-relative directory dir
// (slash-separated; "" is the root) one element at a time through the root
// handle, and returns the real directory relative to the root. The part
// that does not exist is kept as written. A link leading out of the root,
// by an absolute target elsewhere or by "..", fails with
// ErrOutsideWorkspace. Each element is looked at with Lstat (and Readlink)
// inside its parent, which is opened (as openDir does) only to look inside
// it: the walk costs the path's depth, not its square.
func (w *Workspace) resolveOnce(dir string) (string, error) {
	todo := strings.Split(dir, "/")
	var done []string
	// seen[i] is what Lstat found at done[i]; open[i] is the directory
	// done[:i] (open[0] the root), opened once the walk looks inside it.
	var seen []fs.FileInfo
	open := []*os.Root{w.dir}
	defer func() {
		for _, r := range open[1:] {
			r.Close()
		}
	}()
	links := 0
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", ErrOutsideWorkspace
			}
			done, seen = done[:len(done)-1], seen[:len(seen)-1]
			if len(open) > len(done)+1 {
				open[len(open)-1].Close()
				open = open[:len(open)-1]
			}
			continue
		}
		var err error
		if i := len(done) - 1; len(open) == i+1 {
			var sub *os.Root
			if sub, err = openChildAs(open[i], done[i], seen[i]); err == nil {
				open = append(open, sub)
			}
		}
		var fi fs.FileInfo
		if err == nil {
			fi, err = open[len(open)-1].Lstat(part)
		}
		// ENOTDIR (ErrNotRegular from opening it): a file stands where a
		// parent directory was, so the rest does not exist (as a path)
		// either.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, ErrNotRegular) {
			rest := path.Join(append(append(append([]string{}, done...), part), todo...)...)
			if rest == ".." || strings.HasPrefix(rest, "../") {
				return "", ErrOutsideWorkspace
			}
			return rest, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done, seen = append(done, part), append(seen, fi)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: %w", path.Join(path.Join(done...), part), errTooManyLinks)
		}
		target, err := open[len(open)-1].Readlink(part)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			r, ok := within(w.root, filepath.Clean(target))
			if !ok {
				if r, ok = within(w.given, filepath.Clean(target)); !ok {
					return "", ErrOutsideWorkspace
				}
			}
			done, seen = nil, nil
			for _, h := range open[1:] {
				h.Close()
			}
			open = open[:1]
			target = r
		} else if t := filepath.ToSlash(target); strings.HasPrefix(t, "/") {
			return "", ErrOutsideWorkspace // rooted but not absolute (Windows): another volume's root
		}
		todo = append(strings.Split(filepath.ToSlash(target), "/"), todo...)
	}
	return path.Join(done...), nil
}

// within returns p relative to root, and whether it lies inside root.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// Kind says what is at a path on disk.
type Kind int

// The kinds Inspect reports.
const (
	Absent  Kind = iota // nothing there
	Regular             // a regular file ckpt can read and replace
	Unsafe              // a symlink, directory or special file, or a parent that is not a plain directory
)

// Entry is what Inspect found at a path.
type Entry struct {
	Kind   Kind
	Mode   fs.FileMode // permission bits, for Regular
	Size   int64
	Reason error // for Unsafe: wraps ErrSymlink, ErrNotRegular or ErrOutsideWorkspace
	// Missing, for Absent: the ancestor directories (relative, deepest
	// first) that do not exist either.
	Missing []string
}

// Inspect looks at the canonical path rel without following any symlink:
// every existing parent must be a real directory (not a link), and the path
// itself must be absent or a regular file. A path through a VCS directory is
// Unsafe with ErrVCSDir, and agent or ckpt configuration with ErrConfig.
func (w *Workspace) Inspect(rel string) (Entry, error) {
	if err := protect(rel); err != nil {
		return Entry{Kind: Unsafe, Reason: err}, nil
	}
	d, base, e, err := w.parent(rel, false)
	if err != nil {
		return Entry{}, fmt.Errorf("capture: %s: %w", rel, err)
	}
	if e != nil {
		return *e, nil
	}
	defer d.close()
	fi, err := d.r.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Entry{Kind: Absent}, nil
	case err != nil:
		return Entry{}, fmt.Errorf("capture: %s: %w", rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return Entry{Kind: Unsafe, Reason: ErrSymlink}, nil
	case !fi.Mode().IsRegular():
		return Entry{Kind: Unsafe, Reason: ErrNotRegular}, nil
	}
	return Entry{Kind: Regular, Mode: fi.Mode().Perm(), Size: fi.Size()}, nil
}

// unsafeErr turns an entry that is not a regular file into the error for rel.
func unsafeErr(rel string, e Entry) error {
	if e.Kind == Absent {
		return fmt.Errorf("capture: %s: %w", rel, fs.ErrNotExist)
	}
	return fmt.Errorf("capture: %s: %w", rel, e.Reason)
}

// OpenFile opens the regular file at rel for reading without following a
// symlink anywhere on its path, and returns it with its mode and size taken
// from the open descriptor (so they match the bytes read). The file opened
// must be the one Lstat saw: a symlink swapped in between fails with
// ErrSymlink. A missing file fails with an error wrapping fs.ErrNotExist.
func (w *Workspace) OpenFile(rel string) (*os.File, fs.FileInfo, error) {
	o := w.opener()
	defer o.close()
	return o.open(rel)
}

// opener is OpenFile for files opened one after another: it keeps the
// directory of the last file open, and opens the next file through it when
// that file is in the same directory, instead of walking to it again from
// the root (an Lstat, open, fstat, Stat of "." and close per level). The
// directory was walked to without following a link when it was opened, as
// OpenFile walks to it; files opened through it are as safe as files
// OpenFile opens, whatever replaces its path meanwhile. One opener serves
// one goroutine; close releases the directory.
type opener struct {
	w    *Workspace
	path string // the directory d is; d is open when held
	d    dir
	held bool
}

func (w *Workspace) opener() *opener { return &opener{w: w} }

func (o *opener) close() {
	if o.held {
		o.d.close()
		o.held = false
	}
}

// open is OpenFile through the directory kept, when rel is in it.
func (o *opener) open(rel string) (*os.File, fs.FileInfo, error) {
	if err := protect(rel); err != nil {
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	parent, base := path.Split(rel)
	if !o.held || o.path != parent {
		o.close()
		d, _, e, err := o.w.parent(rel, false)
		if err != nil {
			return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
		}
		if e != nil {
			return nil, nil, unsafeErr(rel, *e)
		}
		o.path, o.d, o.held = parent, d, true
	}
	fi, err := o.d.r.Lstat(base)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, ErrSymlink)
	case !fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, ErrNotRegular)
	}
	f, ofi, err := openRegular(o.d.r, base, fi)
	if err != nil {
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	return f, ofi, nil
}

// hashIn reads the regular file name of the open directory d, which Lstat
// found to be fi, and returns its state.
func hashIn(d dir, name string, fi fs.FileInfo) (checkpoints.State, error) {
	f, ofi, err := openRegular(d.r, name, fi)
	if err != nil {
		return checkpoints.State{}, err
	}
	defer f.Close()
	id, n, err := cas.SumReader(f)
	if err != nil {
		return checkpoints.State{}, err
	}
	if n != ofi.Size() {
		return checkpoints.State{}, fmt.Errorf("file changed while it was read (%d bytes, then %d)", ofi.Size(), n)
	}
	return checkpoints.State{Content: &id, Mode: ofi.Mode().Perm(), Size: n}, nil
}
