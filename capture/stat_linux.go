//go:build linux

package capture

import (
	"io/fs"
	"syscall"
)

// statSeesCTime says that statKey reads a file's ctime and inode, so a
// rewrite that keeps the size and puts the mtime back changes the key.
const statSeesCTime = true

// statKey returns what the stat cache compares beyond size and mode: mtime
// and ctime in nanoseconds and the inode. ctime changes whenever anything
// touches the file, including a tool that puts the old mtime back.
func statKey(fi fs.FileInfo) (mtime, ctime int64, inode uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime().UnixNano(), fi.ModTime().UnixNano(), 0
	}
	return st.Mtim.Nano(), st.Ctim.Nano(), st.Ino
}
