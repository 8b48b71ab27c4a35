//go:build linux && !(amd64 || arm64)

package capture

import "golang.org/x/sys/unix"

// lstatAt lstats name in the directory dirfd (fstatat with
// AT_SYMLINK_NOFOLLOW).
func lstatAt(dirfd int, name string, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}
