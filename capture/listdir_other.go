//go:build !linux

package capture

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// dirent is one entry of a directory listing and what lstat said of it.
type dirent struct {
	name         string
	mode         fs.FileMode
	size         int64
	mtime, ctime int64
	ino          uint64
	fi           fs.FileInfo
}

func (e *dirent) key() fileKey { return keyOf(e.fi) }

func (e *dirent) same(fi fs.FileInfo) bool { return os.SameFile(e.fi, fi) }

// scanDir is a directory the scan walks, through a handle of its own
// opened inside its parent's (the workspace root's own, which it does not
// close, for the root).
type scanDir struct {
	r      *os.Root
	shared bool
}

func openScanRoot(r *os.Root) (scanDir, error) { return scanDir{r: r, shared: true}, nil }

func (d scanDir) close() {
	if !d.shared {
		d.r.Close()
	}
}

// list appends the entries of d to buf, sorted by name, each with its
// lstat; an entry gone before its lstat is left out.
func (d scanDir) list(buf []dirent) ([]dirent, error) {
	ents, err := readDir(d.r)
	if err != nil {
		return buf, err
	}
	start := len(buf)
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return buf, err
		}
		mtime, ctime, ino := statKey(fi)
		buf = append(buf, dirent{name: e.Name(), mode: fi.Mode(), size: fi.Size(), mtime: mtime, ctime: ctime, ino: ino, fi: fi})
	}
	slices.SortFunc(buf[start:], func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return buf, nil
}

// openDir opens the subdirectory e of d (see openChildSame).
func (d scanDir) openDir(e *dirent) (scanDir, error) {
	sub, err := openChildSame(d.r, e.name, e.mode, e.same)
	return scanDir{r: sub}, err
}

// openFile opens the regular file e of d for reading (see
// openRegularSame).
func (d scanDir) openFile(e *dirent) (*os.File, fs.FileInfo, error) {
	return openRegularSame(d.r, e.name, e.same)
}
