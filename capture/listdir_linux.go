//go:build linux

package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirent is one entry of a directory listing and what lstat said of it;
// a directory the listing's file type says is one is not lstat'ed (see
// list): its mode is fs.ModeDir, the rest zero, and lstated false.
type dirent struct {
	name         string
	mode         fs.FileMode // as fs.FileInfo.Mode: type bits and permissions
	size         int64
	mtime, ctime int64 // nanoseconds
	ino, dev     uint64
	lstated      bool
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

// scanDir is a directory the scan walks: a descriptor of the workspace
// root's, or one opened from its parent's by a listed name (never a slash,
// "." or "..") with O_NOFOLLOW, so, like the root handle, it can never
// lead out of the workspace. It is a bare descriptor because a scan opens
// every directory of the tree: an os.Root per directory and an os.File
// for its listing cost three system calls more per directory than git's
// opendir.
type scanDir struct{ fd int }

// openScanRoot returns a scanDir of the root handle's directory.
func openScanRoot(r *os.Root) (scanDir, error) {
	f, err := r.OpenFile(".", os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return scanDir{-1}, err
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return scanDir{-1}, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(p uintptr) { fd, derr = unix.FcntlInt(p, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return scanDir{-1}, err
	}
	return scanDir{fd}, derr
}

func (d scanDir) close() { unix.Close(d.fd) }

// direntBufs holds getdents buffers; nameBufs the names of a listing, by
// offset into its name bytes, while they are sorted.
var (
	direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	nameBufs   = sync.Pool{New: func() any { return new([]string) }}
)

// list appends the entries of d to buf, sorted by name: its names
// (getdents), each lstat'ed from d's descriptor (fstatat, nothing
// followed) into one reused buffer. The names are copied into one buffer
// per listing, each after its file type and followed by a NUL, which
// fstatat takes as it is: a listing allocates that buffer, not a string
// per name. An entry gone before its lstat is left out.
//
// An entry whose file type (d_type) is a directory is not lstat'ed: all
// a scan does with a directory is open it by name with O_NOFOLLOW and
// O_DIRECTORY (openDir), which fails for anything but a real directory,
// whatever the name holds by then. A file system that does not fill in
// the type (DT_UNKNOWN) has its entries lstat'ed.
func (d scanDir) list(buf []dirent) ([]dirent, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	var names []byte // every entry's type, name and NUL
	for {
		n, err := unix.Getdents(d.fd, *bp)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "getdents", Path: ".", Err: err}
		}
		if n <= 0 {
			break
		}
		if names == nil {
			names = make([]byte, 0, n/2)
		}
		var ok bool
		if names, ok = appendNames(names, (*bp)[:n]); !ok {
			return buf, &fs.PathError{Op: "getdents", Path: ".", Err: unix.EIO}
		}
	}
	np := nameBufs.Get().(*[]string)
	defer func() { clear(*np); *np = (*np)[:0]; nameBufs.Put(np) }()
	sorted := (*np)[:0]
	for i := 0; i < len(names); {
		j := i + 1 + bytes.IndexByte(names[i+1:], 0)
		sorted = append(sorted, unsafe.String(&names[i+1], j-i-1))
		i = j + 1
	}
	*np = sorted
	slices.Sort(sorted) // strings sort faster than dirents
	var st unix.Stat_t
	for _, name := range sorted {
		// The type is the byte before the name in names.
		if names[uintptr(unsafe.Pointer(unsafe.StringData(name)))-uintptr(unsafe.Pointer(&names[0]))-1] == unix.DT_DIR {
			buf = append(buf, dirent{name: name, mode: fs.ModeDir})
			continue
		}
		err := lstatAt(d.fd, name, &st)
		for errors.Is(err, unix.EINTR) {
			err = lstatAt(d.fd, name, &st)
		}
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing
		}
		if err != nil {
			return buf, &fs.PathError{Op: "lstat", Path: name, Err: err}
		}
		buf = append(buf, dirent{name: name, mode: unixMode(st.Mode), size: st.Size,
			mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, dev: uint64(st.Dev), lstated: true})
	}
	return buf, nil
}

// appendNames appends the entries of the linux_dirent64 records in b to
// names, each as its type (d_type), its name and a NUL, leaving out ".",
// ".." and deleted entries (inode 0). ok is false for a malformed record.
func appendNames(names []byte, b []byte) (_ []byte, ok bool) {
	const nameOff = 19 // d_ino 8, d_off 8, d_reclen 2, d_type 1
	for len(b) > 0 {
		if len(b) < nameOff {
			return names, false
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:]))
		if reclen < nameOff || reclen > len(b) {
			return names, false
		}
		rec := b[:reclen]
		b = b[reclen:]
		name := rec[nameOff:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		} else {
			return names, false
		}
		if binary.NativeEndian.Uint64(rec) == 0 || len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		names = append(append(append(names, rec[nameOff-1]), name...), 0)
	}
	return names, true
}

// openat opens the entry e of d with flags, adding O_NOFOLLOW and
// O_CLOEXEC. It fails with an error wrapping fs.ErrNotExist, ErrSymlink
// (now a symlink) or ErrNotRegular (flags asked for a directory and found
// another kind).
func (d scanDir) openat(e *dirent, flags int) (int, error) {
	fd, err := unix.Openat(d.fd, e.name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Openat(d.fd, e.name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, ErrSymlink
	case errors.Is(err, unix.ENOTDIR):
		return -1, ErrNotRegular
	case err != nil:
		return -1, &fs.PathError{Op: "open", Path: e.name, Err: err}
	}
	return fd, nil
}

// openDir opens the subdirectory e of d and, when the listing lstat'ed
// it, checks with fstat that it is the directory the listing found. It
// fails with an error wrapping
// fs.ErrNotExist, ErrSymlink (a symlink, or errSwapped) or ErrNotRegular.
func (d scanDir) openDir(e *dirent) (scanDir, error) {
	if e.mode&fs.ModeSymlink != 0 {
		return scanDir{-1}, ErrSymlink
	}
	if !e.mode.IsDir() {
		return scanDir{-1}, ErrNotRegular
	}
	fd, err := d.openat(e, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return scanDir{-1}, err
	}
	if !e.lstated {
		return scanDir{fd}, nil // a real directory, as the listing's type said: nothing to compare
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return scanDir{-1}, &fs.PathError{Op: "fstat", Path: e.name, Err: err}
	}
	if uint64(st.Dev) != e.dev || st.Ino != e.ino {
		unix.Close(fd)
		return scanDir{-1}, errSwapped
	}
	return scanDir{fd}, nil
}

// openFile opens the regular file e of d for reading and returns it with
// its descriptor's stat, as openRegular does: errSwapped when that is not
// the regular file the listing found. O_NONBLOCK keeps a FIFO swapped in
// from blocking the open.
func (d scanDir) openFile(e *dirent) (*os.File, fs.FileInfo, error) {
	fd, err := d.openat(e, unix.O_RDONLY|unix.O_NONBLOCK)
	if errors.Is(err, ErrNotRegular) {
		err = errSwapped
	}
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), e.name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || !e.same(fi) {
		f.Close()
		return nil, nil, errSwapped
	}
	return f, fi, nil
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
