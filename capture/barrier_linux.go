//go:build linux

package capture

import (
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

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

// maxOthersDirty is how much dirty page cache the system may hold when a
// barrier is opened: syncfs writes back everything dirty on the file
// system, other processes' data too. With little of it, one syncfs of a
// thousand staged files took 45-65 ms where fsyncing them 32 at a time
// took 150-340 ms (journaled ext4); with ~100 MiB of a build's data
// dirty, syncfs waited for all of it and the writes it set going slowed
// the renames after it, so then each file is fsynced instead.
const maxOthersDirty = 32 << 20

// fewDirty reports whether the system's dirty and under-write-back page
// cache (/proc/meminfo) is at most maxOthersDirty; false when it cannot
// be read.
func fewDirty() bool {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	total, seen := int64(0), 0
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != "Dirty" && name != "Writeback" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return false
		}
		total += kb << 10
		seen++
	}
	return seen == 2 && total <= maxOthersDirty
}

func syncfsDurable(f *os.File) bool {
	if !syncfsReportsErrors() || !fewDirty() {
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

// sameDevice reports whether a and b are on one file system.
func sameDevice(a, b fs.FileInfo) bool {
	sa, ok := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok && ok2 && sa.Dev == sb.Dev
}
