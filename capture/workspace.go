package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
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

// vcsDirs are directory names ckpt never reads or writes under.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, ".bzr": true}

// Workspace is the directory tree an agent edits. It is immutable and safe
// for concurrent use.
type Workspace struct {
	root  string // absolute, symlinks resolved
	given string // absolute, as given (may differ when the root is reached via a link)
}

// NewWorkspace returns the workspace rooted at dir, which must be an existing
// directory.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("capture: workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("capture: workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("capture: workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("capture: workspace %s: not a directory", dir)
	}
	return &Workspace{root: real, given: filepath.Clean(abs)}, nil
}

// Root returns the workspace's absolute root, symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// Abs returns the absolute file-system path of a canonical relative path.
func (w *Workspace) Abs(rel string) string { return filepath.Join(w.root, filepath.FromSlash(rel)) }

// Rel resolves p (absolute, or relative to the workspace root) to its
// canonical workspace-relative path. Symlinked parent directories are
// resolved and must stay inside the workspace; the last element is not
// followed. It fails with ErrOutsideWorkspace or ErrVCSDir.
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
	// Resolve the parent directory's symlinks (the longest existing prefix)
	// and check it is still inside the root.
	dir, base := filepath.Split(filepath.FromSlash(rel))
	realDir, err := resolveExisting(filepath.Join(w.root, dir))
	if err != nil {
		return "", fmt.Errorf("capture: %s: %w", p, err)
	}
	relDir, ok := within(w.root, realDir)
	if !ok {
		return "", fmt.Errorf("capture: %s: %w", p, ErrOutsideWorkspace)
	}
	out := path.Join(filepath.ToSlash(relDir), base)
	for _, part := range strings.Split(out, "/") {
		if vcsDirs[part] {
			return "", fmt.Errorf("capture: %s: %w", p, ErrVCSDir)
		}
	}
	return out, nil
}

// within returns p relative to root, and whether it lies inside root.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// resolveExisting evaluates symlinks in the longest existing prefix of dir
// and appends the rest unchanged.
func resolveExisting(dir string) (string, error) {
	var rest []string
	cur := filepath.Clean(dir)
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) { // a file where a parent directory was: the rest does not exist
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
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
// itself must be absent or a regular file.
func (w *Workspace) Inspect(rel string) (Entry, error) {
	parts := strings.Split(rel, "/")
	cur := w.root
	for i, part := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			var missing []string
			for j := len(parts) - 2; j >= i; j-- {
				missing = append(missing, strings.Join(parts[:j+1], "/"))
			}
			return Entry{Kind: Absent, Missing: missing}, nil
		}
		if err != nil {
			return Entry{}, fmt.Errorf("capture: %s: %w", rel, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return Entry{Kind: Unsafe, Reason: fmt.Errorf("parent %s: %w", strings.Join(parts[:i+1], "/"), ErrSymlink)}, nil
		case !fi.IsDir():
			return Entry{Kind: Unsafe, Reason: fmt.Errorf("parent %s: %w", strings.Join(parts[:i+1], "/"), ErrNotRegular)}, nil
		}
	}
	fi, err := os.Lstat(w.Abs(rel))
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

// OpenFile opens the regular file at rel for reading without following a
// symlink at its last element, and returns it with its mode and size taken
// from the open descriptor (so they match the bytes read).
func (w *Workspace) OpenFile(rel string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(w.Abs(rel), os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		if isLoop(err) {
			return nil, nil, fmt.Errorf("capture: %s: %w", rel, ErrSymlink)
		}
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("capture: %s: %w", rel, ErrNotRegular)
	}
	return f, fi, nil
}

// tempPrefix starts the name of every file a rewind stages; tag names the
// operation, so a crashed operation's leftovers can be found (CleanStaged).
func tempPrefix(tag string) string { return ".ckpt-" + tag + "-" }

// Staged is a temp file Stage wrote: rel's new content, not yet in place.
type Staged struct {
	Rel  string
	name string // absolute path of the temp file
}

// Stage writes r to a new temp file next to rel (a name no one can
// predict, created exclusively, so nothing planted there is followed or
// truncated) with the given permission bits, and fsyncs it. It creates
// rel's missing parent directories, refusing (ErrSymlink, ErrNotRegular) to
// pass through a symlink or a non-directory.
func (w *Workspace) Stage(rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	if err := w.mkdirs(rel); err != nil {
		return Staged{}, err
	}
	dir := filepath.Dir(w.Abs(rel))
	f, err := os.CreateTemp(dir, tempPrefix(tag)+"*.tmp")
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	st := Staged{Rel: rel, name: f.Name()}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Chmod(mode.Perm())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(st.name)
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	return st, nil
}

// Commit renames the staged file into place, after checking once more that
// the parents are real directories and rel is not a symlink or directory.
func (w *Workspace) Commit(s Staged) error {
	e, err := w.Inspect(s.Rel)
	if err != nil {
		return err
	}
	if e.Kind == Unsafe {
		w.Discard(s)
		return fmt.Errorf("capture: %s: %w", s.Rel, e.Reason)
	}
	if err := os.Rename(s.name, w.Abs(s.Rel)); err != nil {
		return fmt.Errorf("capture: commit %s: %w", s.Rel, err)
	}
	return nil
}

// Discard removes a staged file that will not be committed.
func (w *Workspace) Discard(s Staged) {
	if s.name != "" {
		os.Remove(s.name)
	}
}

// CleanStaged removes the temp files an operation tagged tag staged next to
// rel and never committed (it crashed): regular files whose name only
// Stage makes. A hard link there only loses that name.
func (w *Workspace) CleanStaged(rel, tag string) {
	if e, err := w.Inspect(rel); err != nil || e.Kind == Unsafe {
		return // never look through a symlinked parent
	}
	dir := filepath.Dir(w.Abs(rel))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, tempPrefix(tag)) && strings.HasSuffix(n, ".tmp") {
			os.Remove(filepath.Join(dir, n))
		}
	}
}

// Remove deletes the regular file at rel (absent is fine) and then each of
// dirs (relative, deepest first) that is an empty real directory.
func (w *Workspace) Remove(rel string, dirs []string) error {
	e, err := w.Inspect(rel)
	if err != nil {
		return err
	}
	switch e.Kind {
	case Unsafe:
		return fmt.Errorf("capture: %s: %w", rel, e.Reason)
	case Regular:
		if err := os.Remove(w.Abs(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("capture: remove %s: %w", rel, err)
		}
	}
	for _, d := range dirs {
		fi, err := os.Lstat(w.Abs(d))
		if err != nil || !fi.IsDir() {
			continue
		}
		// os.Remove fails on a non-empty directory: that is the check.
		if os.Remove(w.Abs(d)) != nil {
			break
		}
	}
	return nil
}

// mkdirs creates rel's missing parent directories, refusing to pass
// through a symlink or a non-directory.
func (w *Workspace) mkdirs(rel string) error {
	parts := strings.Split(rel, "/")
	cur := w.root
	for i, part := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("capture: mkdir %s: %w", strings.Join(parts[:i+1], "/"), err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("capture: %s: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("capture: %s: parent %s: %w", rel, strings.Join(parts[:i+1], "/"), ErrSymlink)
		}
		if !fi.IsDir() {
			return fmt.Errorf("capture: %s: parent %s: %w", rel, strings.Join(parts[:i+1], "/"), ErrNotRegular)
		}
	}
	return nil
}

// DirFiles lists the regular files (workspace-relative) under rel, which
// must be a real directory reached through real directories; nothing is
// followed. It fails with an error wrapping ErrSymlink or ErrNotRegular
// when rel is not such a directory or holds a symlink or special file.
func (w *Workspace) DirFiles(rel string) ([]string, error) {
	if err := w.realDir(rel); err != nil {
		return nil, err
	}
	var files []string
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(w.Abs(dir))
		if err != nil {
			return fmt.Errorf("capture: %s: %w", dir, err)
		}
		for _, e := range ents {
			p := dir + "/" + e.Name()
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				return fmt.Errorf("capture: %s: %w", p, ErrSymlink)
			case t.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case t.IsRegular():
				files = append(files, p)
			default:
				return fmt.Errorf("capture: %s: %w", p, ErrNotRegular)
			}
		}
		return nil
	}
	if err := walk(rel); err != nil {
		return nil, err
	}
	return files, nil
}

// RemoveEmptyDir removes rel, a real directory holding nothing but
// (recursively) empty directories. It fails, removing nothing more, when
// anything else is in it.
func (w *Workspace) RemoveEmptyDir(rel string) error {
	files, err := w.DirFiles(rel)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return fmt.Errorf("capture: %s: directory is not empty", rel)
	}
	var rm func(dir string) error
	rm = func(dir string) error {
		ents, err := os.ReadDir(w.Abs(dir))
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() {
				return fmt.Errorf("%s: directory is not empty", dir)
			}
			if err := rm(dir + "/" + e.Name()); err != nil {
				return err
			}
		}
		return os.Remove(w.Abs(dir)) // fails if something appeared meanwhile
	}
	if err := rm(rel); err != nil {
		return fmt.Errorf("capture: remove %s: %w", rel, err)
	}
	return nil
}

// MakeParents creates rel's missing parent directories, refusing
// (ErrSymlink, ErrNotRegular) to pass through a symlink or a non-directory.
func (w *Workspace) MakeParents(rel string) error { return w.mkdirs(rel) }

// realDir checks that rel and each of its parents is a real directory.
func (w *Workspace) realDir(rel string) error {
	parts := strings.Split(rel, "/")
	cur := w.root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("capture: %s: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("capture: %s: %s: %w", rel, strings.Join(parts[:i+1], "/"), ErrSymlink)
		}
		if !fi.IsDir() {
			return fmt.Errorf("capture: %s: %s: %w", rel, strings.Join(parts[:i+1], "/"), ErrNotRegular)
		}
	}
	return nil
}

// IsDir reports whether rel and each of its parents is a real directory
// (not a symlink).
func (w *Workspace) IsDir(rel string) bool { return w.realDir(rel) == nil }
