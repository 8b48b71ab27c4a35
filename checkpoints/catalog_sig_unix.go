//go:build unix

package checkpoints

import (
	"os"
	"syscall"
)

// statSig is fi's signature: device, inode, size, ctime and mtime.
func statSig(fi os.FileInfo) fileSig {
	f := fileSig{exists: true, regular: fi.Mode().IsRegular(), size: fi.Size(), mtime: modTime(fi)}
	f.ctime = f.mtime
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.dev, f.ino = uint64(st.Dev), uint64(st.Ino)
		f.ctime = ctimeOf(st, f.mtime)
	}
	return f
}
