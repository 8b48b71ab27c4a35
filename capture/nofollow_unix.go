//go:build unix

package capture

import (
	"errors"
	"syscall"
)

const oNoFollow = syscall.O_NOFOLLOW

// isLoop reports whether err is what O_NOFOLLOW gives for a symlink.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
