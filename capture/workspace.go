package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
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
func (w *Workspace) Rel(p string) (string, error) {
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
	realDir, err := w.resolveDir(dir)
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
	if err := protect(rel); err != nil {
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, base, e, err := w.parent(rel, false)
	if err != nil {
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	if e != nil {
		return nil, nil, unsafeErr(rel, *e)
	}
	defer d.close()
	fi, err := d.r.Lstat(base)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, ErrSymlink)
	case !fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, ErrNotRegular)
	}
	f, ofi, err := openRegular(d.r, base, fi)
	if err != nil {
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	return f, ofi, nil
}

// tempPrefix starts the name of every file a rewind stages; tag names the
// operation, so a crashed operation's leftovers can be found (CleanStaged).
func tempPrefix(tag string) string { return ".ckpt-" + tag + "-" }

// isStagingName reports whether a file name is one Stage makes.
func isStagingName(name string) bool {
	return strings.HasPrefix(name, ".ckpt-") && strings.HasSuffix(name, ".tmp")
}

// Staged is a temp file Stage wrote: rel's new content, not yet in place.
type Staged struct {
	Rel  string
	name string      // the temp file's name, in rel's directory
	dir  fs.FileInfo // that directory, as Stage found it
	f    *os.File    // open until synced: StageUnsynced's file before SyncStaged
	b    *Barrier    // StageFor's barrier: durable once it has synced
}

// Stage writes r to a new temp file next to rel (a name no one can
// predict, created exclusively, so nothing planted there is followed or
// truncated) with the given permission bits, and fsyncs it. It creates
// rel's missing parent directories, refusing (ErrSymlink, ErrNotRegular,
// ErrVCSDir) to pass through a symlink, a non-directory or a VCS directory.
func (w *Workspace) Stage(rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	s, err := w.StageUnsynced(rel, tag, r, mode)
	if err == nil {
		err = w.SyncStaged(&s)
	}
	return s, err
}

// StageUnsynced is Stage without the fsync: the temp file is written and
// left open, and SyncStaged must make it durable (and close it) before it
// is committed. An operation staging many files writes them all first and
// then syncs them concurrently, so the file system commits many of them
// in each journal transaction instead of one per file.
func (w *Workspace) StageUnsynced(rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	return w.stage(rel, tag, r, mode, nil)
}

// StageFor is StageUnsynced for an operation that makes its files durable
// with one Barrier: the temp file is written and closed, and Commit takes
// it only once b.Sync has returned nil.
func (w *Workspace) StageFor(b *Barrier, rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	return w.stage(rel, tag, r, mode, b)
}

// stage writes the temp file: left open for SyncStaged when b is nil,
// closed and left to b otherwise.
func (w *Workspace) stage(rel, tag string, r io.Reader, mode fs.FileMode, b *Barrier) (Staged, error) {
	if err := protect(rel); err != nil {
		return Staged{}, fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, _, e, err := w.parent(rel, true)
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	if e != nil {
		return Staged{}, unsafeErr(rel, *e)
	}
	defer d.close()
	dirInfo, err := d.info()
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	var f *os.File
	var name string
	for try := 0; ; try++ {
		name = tempPrefix(tag) + strconv.FormatUint(uint64(rand.Uint32()), 10) + ".tmp"
		f, err = d.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		break
	}
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	_, err = copySparse(f, r)
	if err == nil {
		err = f.Chmod(mode.Perm())
	}
	if err != nil {
		f.Close()
		d.r.Remove(name)
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	if b != nil {
		if !b.covers(dirInfo) {
			err = f.Sync() // another file system, mounted below the root: syncfs of the root's misses it
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			d.r.Remove(name)
			return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
		}
		return Staged{Rel: rel, name: name, dir: dirInfo, b: b}, nil
	}
	return Staged{Rel: rel, name: name, dir: dirInfo, f: f}, nil
}

// SyncStaged makes a file StageUnsynced wrote durable and closes it; for
// a file Stage wrote it does nothing. When it fails the temp file is
// removed, and s can only be discarded.
func (w *Workspace) SyncStaged(s *Staged) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err != nil {
		w.Discard(*s)
		s.name = ""
		return fmt.Errorf("capture: stage %s: %w", s.Rel, err)
	}
	return nil
}

// stagedDir opens the directory s was staged in, if it is still where
// Stage found it (the same directory, reached without a link).
func (w *Workspace) stagedDir(s Staged) (dir, error) {
	d, _, e, err := w.parent(s.Rel, false)
	if err != nil {
		return dir{}, fmt.Errorf("capture: %s: %w", s.Rel, err)
	}
	if e != nil {
		return dir{}, unsafeErr(s.Rel, *e)
	}
	fi, err := d.info()
	if err == nil && !os.SameFile(fi, s.dir) {
		err = errSwapped
	}
	if err != nil {
		d.close()
		return dir{}, fmt.Errorf("capture: %s: parent: %w", s.Rel, err)
	}
	return d, nil
}

// Commit renames the staged file into place, after checking once more that
// the parents are real directories, the same ones Stage wrote in, and that
// rel is not a symlink or directory. The rename happens inside the open
// parent directory: it replaces rel's entry and follows nothing. Syncing
// the directory is left to SyncDirs, once for all the files of an
// operation. A file StageUnsynced wrote must be synced first (SyncStaged),
// and one StageFor wrote its barrier's Sync must have succeeded: otherwise
// Commit discards it and fails.
func (w *Workspace) Commit(s Staged) error { return w.CommitIf(s, nil) }

// CommitIf is Commit that first looks at what rel holds now, through the
// directory handle the rename goes through, and renames only when check
// (unless nil) accepts it: cur is absent (nil Content) or the regular
// file's hash, permission bits and size. When check or the read fails,
// the temp file is removed and the error returned. A caller that must not
// overwrite a change made since it planned saves a second walk to the
// file this way.
func (w *Workspace) CommitIf(s Staged, check func(cur checkpoints.State) error) error {
	if s.f != nil || s.b != nil && !s.b.durable() {
		w.Discard(s)
		return fmt.Errorf("capture: commit %s: staged file not synced", s.Rel)
	}
	d, err := w.stagedDir(s)
	if err != nil {
		return err // the temp file, if any, is out of reach: CleanStaged finds it
	}
	defer d.close()
	_, base := splitRel(s.Rel)
	fi, err := d.r.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		d.r.Remove(s.name)
		return fmt.Errorf("capture: commit %s: %w", s.Rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		d.r.Remove(s.name)
		return fmt.Errorf("capture: %s: %w", s.Rel, ErrSymlink)
	case !fi.Mode().IsRegular():
		d.r.Remove(s.name)
		return fmt.Errorf("capture: %s: %w", s.Rel, ErrNotRegular)
	}
	if check != nil {
		var cur checkpoints.State
		if err == nil {
			if cur, err = hashIn(d, base, fi); err != nil {
				d.r.Remove(s.name)
				return fmt.Errorf("capture: %s: %w", s.Rel, err)
			}
		}
		if err := check(cur); err != nil {
			d.r.Remove(s.name)
			return err
		}
	}
	if err := d.r.Rename(s.name, base); err != nil {
		d.r.Remove(s.name)
		return fmt.Errorf("capture: commit %s: %w", s.Rel, err)
	}
	return nil
}

// Discard removes a staged file that will not be committed.
func (w *Workspace) Discard(s Staged) {
	if s.f != nil {
		s.f.Close()
	}
	if s.name == "" {
		return
	}
	if d, err := w.stagedDir(s); err == nil {
		if fi, err := d.r.Lstat(s.name); err == nil && fi.Mode().IsRegular() {
			d.r.Remove(s.name)
		}
		d.close()
	}
}

// CleanStaged removes the temp files an operation tagged tag staged and
// never committed (it crashed), in every directory on the way to the
// paths rels, the root included: regular files whose name only Stage
// makes. Each directory is listed once, however many paths go through it
// (see walkDirs), and one reached through a symlink is never looked in. A
// hard link there only loses that name.
func (w *Workspace) CleanStaged(rels []string, tag string) {
	w.walkDirs(rels, func(_ string, r *os.Root) error {
		ents, err := readDir(r)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			n := e.Name()
			if e.Type().IsRegular() && strings.HasPrefix(n, tempPrefix(tag)) && strings.HasSuffix(n, ".tmp") {
				r.Remove(n)
			}
		}
		return nil
	})
}

// Remove deletes the regular file at rel (absent is fine) and then each of
// dirs (relative, deepest first) that is an empty real directory. Each
// removal happens inside its open parent directory and removes the entry
// itself: a symlink swapped in is unlinked, never followed.
func (w *Workspace) Remove(rel string, dirs []string) error {
	if err := protect(rel); err != nil {
		return fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, base, e, err := w.parent(rel, false)
	if err != nil {
		return fmt.Errorf("capture: %s: %w", rel, err)
	}
	if e != nil && e.Kind == Unsafe {
		return fmt.Errorf("capture: %s: %w", rel, e.Reason)
	}
	if e == nil {
		fi, err := d.r.Lstat(base)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			d.close()
			return fmt.Errorf("capture: %s: %w", rel, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			d.close()
			return fmt.Errorf("capture: %s: %w", rel, ErrSymlink)
		case !fi.Mode().IsRegular():
			d.close()
			return fmt.Errorf("capture: %s: %w", rel, ErrNotRegular)
		default:
			if err := d.r.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.close()
				return fmt.Errorf("capture: remove %s: %w", rel, err)
			}
		}
		d.close()
	}
	// A directory that is (or is inside) agent or ckpt configuration, or
	// a VCS directory, is left with every directory above it.
	for i, dr := range dirs {
		if protect(dr) != nil {
			dirs = dirs[:i]
			break
		}
	}
	w.removeDirs(dirs)
	return nil
}

// removeDirs removes each of dirs (relative, deepest first, each the
// parent of the one before) that is an empty real directory, from inside
// its parent's handle, and stops at the first that is not empty. It walks
// the chain down once, keeping a handle every maxHeld levels, and walks
// each stretch between two kept handles once more on the way up: linear in
// the depth, with about depth/maxHeld + maxHeld handles open.
func (w *Workspace) removeDirs(dirs []string) {
	if len(dirs) == 0 {
		return
	}
	names, ok := chainNames(dirs)
	if !ok {
		// Not a chain: remove one at a time.
		for _, dr := range dirs {
			if !w.removeDirs1(dr) {
				return
			}
		}
		return
	}
	if _, ok := vcsElem(dirs[0]); ok {
		return // dirs[0] holds every element of the chain
	}
	m := len(dirs)
	parts, _ := splitRel(dirs[m-1])
	top, e, err := w.openDir(parts, false)
	if err != nil || e != nil {
		return
	}
	c := &dirChain{names: names, held: make([]*os.Root, m+1)}
	c.held[m] = top.r
	defer c.close(top.own)
	c.descend()
	c.removeUp()
}

// chainNames returns the last element of each of dirs, and whether each
// of dirs is the parent of the one before.
func chainNames(dirs []string) ([]string, bool) {
	names := make([]string, len(dirs))
	for i, dr := range dirs {
		_, names[i] = splitRel(dr)
		if i > 0 && path.Dir(dirs[i-1]) != dr {
			return nil, false
		}
	}
	return names, true
}

// dirChain is removeDirs' walk of a chain of directories: names[i] is the
// last element of dirs[i], and held[i] a handle on dirs[i] (held[m]: on
// the parent of dirs[m-1], the top), or nil.
type dirChain struct {
	names []string
	held  []*os.Root
}

// close closes the handles still held, the top's only when it is the
// chain's own.
func (c *dirChain) close(ownTop bool) {
	m := len(c.names)
	for i, r := range c.held {
		if r != nil && (i < m || ownTop) {
			r.Close()
		}
	}
}

// open fills held[i..j) from held[j], as far as the directories are
// there.
func (c *dirChain) open(i, j int) {
	for k := j - 1; k >= i; k-- {
		sub, err := openChild(c.held[k+1], c.names[k])
		if err != nil {
			return
		}
		c.held[k] = sub
	}
}

// descend walks the chain down from the top as far as it goes, keeping
// every maxHeld-th handle and the deepest.
func (c *dirChain) descend() {
	m := len(c.names)
	cur, at := c.held[m], m
	for k := m - 1; k >= 1; k-- {
		sub, err := openChild(cur, c.names[k])
		if err != nil {
			break
		}
		if at != m && c.held[at] == nil {
			cur.Close()
		}
		cur, at = sub, k
		if k%maxHeld == 0 {
			c.held[k] = sub
		}
	}
	if at != m && c.held[at] == nil {
		c.held[at] = cur // the deepest reached
	}
}

// removeUp removes dirs[i] from inside held[i+1], deepest first, reopening
// each stretch between two kept handles once, and stops at the first
// directory that is not empty.
func (c *dirChain) removeUp() {
	held := c.held
	for i := range c.names {
		if held[i+1] == nil {
			j := i + 1
			for held[j] == nil {
				j++
			}
			c.open(i+1, j)
		}
		if held[i] != nil {
			held[i].Close()
			held[i] = nil
		}
		p := held[i+1]
		if p == nil {
			continue // a directory above dirs[i] is gone, and so is it
		}
		fi, err := p.Lstat(c.names[i])
		if err != nil || !fi.IsDir() {
			continue
		}
		// Removing a non-empty directory fails: that is the check.
		if p.Remove(c.names[i]) != nil {
			return
		}
	}
}

// removeDirs1 removes the directory dr if it is an empty real directory,
// and reports whether removing the next one up may go on.
func (w *Workspace) removeDirs1(dr string) bool {
	if _, ok := vcsElem(dr); ok {
		return false
	}
	pd, b, e, err := w.parent(dr, false)
	if err != nil || e != nil {
		return true
	}
	defer pd.close()
	fi, err := pd.r.Lstat(b)
	if err != nil || !fi.IsDir() {
		return true
	}
	// Removing a non-empty directory fails: that is the check.
	return pd.r.Remove(b) == nil
}

// SyncDirs makes the renames, removals and directory creations of an
// operation durable: it fsyncs, once each, every existing directory on the
// way to the paths rels (the root included), opening each once (see
// walkDirs). Directories reached only
// through a symlink are skipped, as every write there was. Windows cannot
// fsync a directory; there it does nothing.
func (w *Workspace) SyncDirs(rels []string) error {
	err := w.walkDirs(rels, func(p string, r *os.Root) error {
		f, err := r.Open(".")
		if err == nil {
			err = w.syncDir(f)
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("sync directory %q: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
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
