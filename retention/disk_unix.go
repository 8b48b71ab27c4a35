//go:build unix

package retention

import (
	"os"
	"syscall"
)

// allocated returns the bytes fi's file takes on disk: its 512-byte blocks.
func allocated(fi os.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return allocatedOr(fi, 0, false)
	}
	return allocatedOr(fi, int64(st.Blocks), true)
}
