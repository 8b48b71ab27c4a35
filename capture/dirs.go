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
	// prefix(i) is the path of parts[:i+1]: slices of one string, so a
	// deep path costs its length, not its length times its depth.
	joined := strings.Join(parts, "/")
	ends := make([]int, len(parts))
	for i, n := 0, -1; i < len(parts); i++ {
		n += 1 + len(parts[i])
		ends[i] = n
	}
	prefix := func(i int) string { return joined[:ends[i]] }
	cur := dir{r: w.dir}
	for i, part := range parts {
		next, err := openChild(cur.r, part)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err := cur.r.Mkdir(part, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				cur.close()
				return dir{}, nil, fmt.Errorf("mkdir %s: %w", prefix(i), err)
			}
			next, err = openChild(cur.r, part)
		}
		cur.close()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			var missing []string
			for j := len(parts) - 1; j >= i; j-- {
				missing = append(missing, prefix(j))
			}
			return dir{}, &Entry{Kind: Absent, Missing: missing}, nil
		case errors.Is(err, ErrSymlink), errors.Is(err, ErrNotRegular):
			return dir{}, &Entry{Kind: Unsafe, Reason: fmt.Errorf("parent %s: %w", prefix(i), err)}, nil
		case err != nil:
			return dir{}, nil, fmt.Errorf("%s: %w", prefix(i), err)
		}
		cur = dir{r: next, own: true}
	}
	return cur, nil, nil
}

// Blocker walks rel's parent directories from the root, once, and returns
// the shallowest that is not a real directory (a file, a symlink, a
// special file, a VCS directory, or one that cannot be read), with what it
// is: Regular with its mode and size for a regular file, else Unsafe with
// the reason. It returns false when every parent is a real directory, or
// one is absent (and with it the rest).
func (w *Workspace) Blocker(rel string) (string, Entry, bool) {
	parts, _ := splitRel(rel)
	cur := dir{r: w.dir}
	defer func() { cur.close() }()
	end := -1
	for _, part := range parts {
		end += 1 + len(part)
		name := rel[:end]
		if isVCSName(part) {
			return name, Entry{Kind: Unsafe, Reason: ErrVCSDir}, true
		}
		fi, err := cur.r.Lstat(part)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", Entry{}, false
		case err != nil:
			return name, Entry{Kind: Unsafe, Reason: fmt.Errorf("capture: %s: %w", name, err)}, true
		case fi.Mode()&fs.ModeSymlink != 0:
			return name, Entry{Kind: Unsafe, Reason: ErrSymlink}, true
		case fi.Mode().IsRegular():
			return name, Entry{Kind: Regular, Mode: fi.Mode().Perm(), Size: fi.Size()}, true
		case !fi.IsDir():
			return name, Entry{Kind: Unsafe, Reason: ErrNotRegular}, true
		}
		next, err := openChildAs(cur.r, part, fi)
		if errors.Is(err, fs.ErrNotExist) {
			return "", Entry{}, false
		}
		if err != nil {
			return name, Entry{Kind: Unsafe, Reason: fmt.Errorf("capture: %s: %w", name, err)}, true
		}
		cur.close()
		cur = dir{r: next, own: true}
	}
	return "", Entry{}, false
}

// maxHeld bounds the directory handles walkDirs keeps open at once.
const maxHeld = 64

// walkDirs calls fn, once each, with every existing real directory on the
// way to the paths rels (the root included, as ""), parents before their
// children, opening each directory once from its parent's handle: the
// cost is the number of directories, however deep. A directory that is a
// symlink, not a directory, absent or a VCS directory is skipped with
// everything below it; an error opening one is collected, and its subtree
// skipped.
func (w *Workspace) walkDirs(rels []string, fn func(p string, d *os.Root) error) error {
	type node struct {
		kids  map[string]*node
		order []string
	}
	root := &node{}
	for _, rel := range rels {
		parts, _ := splitRel(rel)
		n := root
		for _, part := range parts {
			k := n.kids[part]
			if k == nil {
				if n.kids == nil {
					n.kids = map[string]*node{}
				}
				k = &node{}
				n.kids[part] = k
				n.order = append(n.order, part)
			}
			n = k
		}
	}
	var errs []error
	held := 0 // directory handles open on the way down
	var walk func(n *node, p string, r *os.Root, own bool)
	walk = func(n *node, p string, r *os.Root, own bool) {
		closeR := func() {
			if own && r != nil {
				r.Close()
				held--
			}
			r = nil
		}
		defer closeR()
		if err := fn(p, r); err != nil {
			errs = append(errs, err)
		}
		for k, part := range n.order {
			if isVCSName(part) {
				continue
			}
			sub := part
			if p != "" {
				sub = p + "/" + part
			}
			if r == nil { // closed to bound the open handles: open it again
				var parts []string
				if p != "" {
					parts = strings.Split(p, "/")
				}
				d, e, err := w.openDir(parts, false)
				if err != nil {
					errs = append(errs, err)
				}
				if err != nil || e != nil {
					return
				}
				r, own = d.r, d.own
				if own {
					held++
				}
			}
			next, err := openChild(r, part)
			switch {
			case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrSymlink), errors.Is(err, ErrNotRegular):
				continue
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", sub, err))
				continue
			}
			held++
			// A chain of directories holds one handle at a time: a parent
			// is closed before its last child is walked, or before any
			// child once many are open.
			if k == len(n.order)-1 || held > maxHeld {
				closeR()
			}
			walk(n.kids[part], sub, next, true)
		}
	}
	walk(root, "", w.dir, false)
	return errors.Join(errs...)
}

// openedDir, when not nil, is called for each directory openChildSame
// opens (tests count them).
var openedDir func()

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
	if err == nil && openedDir != nil {
		openedDir()
	}
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
