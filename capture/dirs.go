package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// errSwapped is the reason for a directory that changed between the check
// of its entry and its opening: most likely swapped for a symlink. The
// directory is then left alone, as a symlink would be.
var errSwapped = fmt.Errorf("%w (it changed while ckpt opened it)", ErrSymlink)

// dir is an open workspace directory: the root handle, or a handle on a
// directory below it that openDir reached without following a link.
type dir struct {
	r   *os.Root
	own bool // r was opened by openDir: close it
}

func (d dir) close() {
	if d.own {
		d.r.Close()
	}
}

// info returns what the open directory is (its identity for os.SameFile).
func (d dir) info() (fs.FileInfo, error) { return d.r.Stat(".") }

// openDir opens the workspace directory made of parts (nil: the root)
// through the root handle, one element at a time: each element is Lstat'ed
// inside the handle of its parent, must be a real directory (not a
// symlink), and is opened as a root of its own whose identity must be what
// Lstat saw. No element is ever followed through a symlink, whatever races
// it: a swap between the check and the open is caught by the identity check
// and os.Root keeps the open itself inside the parent.
//
// When an element is missing, openDir returns an Absent entry listing the
// missing directories (deepest first), or with create makes them (mode
// 0755, less the umask). A symlink or non-directory on the way is an Unsafe
// entry whose Reason names it. Other errors are returned as errors.
func (w *Workspace) openDir(parts []string, create bool) (dir, *Entry, error) {
	cur := dir{r: w.dir}
	for i, part := range parts {
		name := strings.Join(parts[:i+1], "/")
		next, err := openChild(cur.r, part)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err := cur.r.Mkdir(part, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				cur.close()
				return dir{}, nil, fmt.Errorf("mkdir %s: %w", name, err)
			}
			next, err = openChild(cur.r, part)
		}
		cur.close()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			var missing []string
			for j := len(parts) - 1; j >= i; j-- {
				missing = append(missing, strings.Join(parts[:j+1], "/"))
			}
			return dir{}, &Entry{Kind: Absent, Missing: missing}, nil
		case errors.Is(err, ErrSymlink), errors.Is(err, ErrNotRegular):
			return dir{}, &Entry{Kind: Unsafe, Reason: fmt.Errorf("parent %s: %w", name, err)}, nil
		case err != nil:
			return dir{}, nil, fmt.Errorf("%s: %w", name, err)
		}
		cur = dir{r: next, own: true}
	}
	return cur, nil, nil
}

// openChild opens the directory entry name of parent as a root of its own,
// after checking with Lstat that it is a real directory, and checks that
// what it opened is that directory. It fails with an error wrapping
// fs.ErrNotExist, ErrSymlink (a symlink, or errSwapped) or ErrNotRegular.
func openChild(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	return openChildAs(parent, name, fi)
}

// openChildAs is openChild for a caller that has Lstat'ed name already
// (fi; a directory listing's entry).
func openChildAs(parent *os.Root, name string, fi fs.FileInfo) (*os.Root, error) {
	return openChildSame(parent, name, fi.Mode(), func(got fs.FileInfo) bool { return os.SameFile(fi, got) })
}

// openChildSame is openChildAs for a listing's entry of mode mode; same
// says whether a stat is of the entry the listing found.
func openChildSame(parent *os.Root, name string, mode fs.FileMode, same func(fs.FileInfo) bool) (*os.Root, error) {
	switch {
	case mode&fs.ModeSymlink != 0:
		return nil, ErrSymlink
	case !mode.IsDir():
		return nil, ErrNotRegular
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		// Gone, unreadable, or swapped since the Lstat: a symlink leading
		// out is refused by os.Root; report it as the swap it was.
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, err
		}
		return nil, errSwapped
	}
	got, err := sub.Stat(".")
	if err != nil {
		sub.Close()
		return nil, err
	}
	if !same(got) {
		sub.Close()
		return nil, errSwapped
	}
	return sub, nil
}

// splitRel splits a canonical relative path into its directory elements
// and its last element.
func splitRel(rel string) ([]string, string) {
	parts := strings.Split(rel, "/")
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// parent opens the directory holding rel's last element (see openDir) and
// returns it with that element's name.
func (w *Workspace) parent(rel string, create bool) (dir, string, *Entry, error) {
	parts, base := splitRel(rel)
	d, e, err := w.openDir(parts, create)
	return d, base, e, err
}

// openRegular opens the entry name of parent for reading, fi being what
// Lstat found there (a regular file), and checks that the open descriptor
// is that file: one swapped in since (a symlink os.Root would follow, a
// FIFO, which oNonblock keeps from blocking) fails with errSwapped.
func openRegular(parent *os.Root, name string, fi fs.FileInfo) (*os.File, fs.FileInfo, error) {
	return openRegularSame(parent, name, func(ofi fs.FileInfo) bool { return os.SameFile(fi, ofi) })
}

// openRegularSame is openRegular for a caller whose listing's entry same
// compares an open descriptor's stat with.
func openRegularSame(parent *os.Root, name string, same func(fs.FileInfo) bool) (*os.File, fs.FileInfo, error) {
	f, err := parent.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	ofi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !ofi.Mode().IsRegular() || !same(ofi) {
		f.Close()
		return nil, nil, errSwapped
	}
	return f, ofi, nil
}
