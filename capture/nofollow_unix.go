//go:build unix

package capture

import (
	"errors"
	"syscall"
)

// oNonblock makes opening a file for reading return at once even if it was
// swapped for a FIFO after it was checked; regular files ignore it.
const oNonblock = syscall.O_NONBLOCK

// isLoop reports whether err is what O_NOFOLLOW gives for a symlink.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
