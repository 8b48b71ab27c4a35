//go:build linux && (amd64 || arm64)

package capture

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// lstatAt lstats name in the directory dirfd (fstatat with
// AT_SYMLINK_NOFOLLOW). name must be followed in memory by a NUL, as the
// names of a listing are (list): the system call takes it as it is,
// where unix.Fstatat would copy it to add one.
func lstatAt(dirfd int, name string, st *unix.Stat_t) error {
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(unsafe.StringData(name))),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
