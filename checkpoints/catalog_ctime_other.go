//go:build unix && !linux && !darwin

package checkpoints

import "syscall"

// ctimeOf falls back to the mtime where the ctime field is not known here.
func ctimeOf(_ *syscall.Stat_t, mtime int64) int64 { return mtime }
