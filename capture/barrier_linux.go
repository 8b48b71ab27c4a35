//go:build linux

package capture

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// syncfsFS are the file systems whose syncfs(2) writes back and commits
// every change durably, as fsync would for each file: local file systems
// with a journal or copy-on-write commit, and tmpfs (where nothing is
// durable and both are no-ops).
var syncfsFS = map[uint32]bool{
	unix.EXT4_SUPER_MAGIC:  true, // also ext2 and ext3
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.F2FS_SUPER_MAGIC:  true,
	unix.TMPFS_MAGIC:       true,
}

// syncfsReportsErrors says whether this kernel's syncfs returns write-back
// errors (Linux 5.8 and later); before, it returned 0 whatever happened.
var syncfsReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// kernelAtLeast parses the leading "major.minor" of a kernel release.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err := strconv.Atoi(parts[0])
	if err != nil {
		return false
	}
	end := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(parts[1])
	}
	mi, err := strconv.Atoi(parts[1][:end])
	if err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

func syncfsDurable(f *os.File) bool {
	if !syncfsReportsErrors() {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return false
	}
	return syncfsFS[uint32(st.Type)]
}

func syncfs(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = unix.Syncfs(int(fd)); serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
