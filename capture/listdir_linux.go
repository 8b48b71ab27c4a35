//go:build linux

package capture

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dirent is one entry of a directory listing and what lstat said of it.
type dirent struct {
	name         string
	mode         fs.FileMode // as fs.FileInfo.Mode: type bits and permissions
	size         int64
	mtime, ctime int64 // nanoseconds
	ino, dev     uint64
}

// key returns what the stat cache compares.
func (e *dirent) key() fileKey {
	return fileKey{size: e.size, mtime: e.mtime, ctime: e.ctime, inode: e.ino, mode: e.mode}
}

// same reports whether fi (an open descriptor's stat) is the file the
// listing stat'ed.
func (e *dirent) same(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == e.dev && st.Ino == e.ino
}

// listDir appends the entries of the open directory d to buf: its names
// (getdents), each lstat'ed from the directory's own descriptor (fstatat,
// nothing followed) into one reused buffer, so a listing allocates
// nothing per entry but its name. An entry gone before its lstat is left
// out.
func listDir(d *os.Root, buf []dirent) ([]dirent, error) {
	// O_NONBLOCK, which a directory ignores, spares the four fcntl calls
	// with which os puts a descriptor opened without it into non-blocking
	// mode and back when the poller refuses it.
	f, err := d.OpenFile(".", os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return buf, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return buf, err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		for _, name := range names {
			err := unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			for errors.Is(err, unix.EINTR) {
				err = unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			}
			if errors.Is(err, unix.ENOENT) {
				continue // gone since the listing
			}
			if err != nil {
				serr = &fs.PathError{Op: "lstat", Path: name, Err: err}
				return
			}
			buf = append(buf, dirent{name: name, mode: unixMode(st.Mode), size: st.Size,
				mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, dev: uint64(st.Dev)})
		}
	})
	if err == nil {
		err = serr
	}
	return buf, err
}

// unixMode turns st_mode into an fs.FileMode as os.Lstat does.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
