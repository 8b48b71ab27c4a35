//go:build !linux

package capture

import (
	"errors"
	"io/fs"
	"os"
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

func (e *dirent) key() fileKey { return statKeyOf(e.fi) }

func (e *dirent) same(fi fs.FileInfo) bool { return os.SameFile(e.fi, fi) }

// listDir appends the entries of the open directory d to buf, each with
// its lstat; an entry gone before its lstat is left out.
func listDir(d *os.Root, buf []dirent) ([]dirent, error) {
	ents, err := readDir(d)
	if err != nil {
		return buf, err
	}
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
	return buf, nil
}
