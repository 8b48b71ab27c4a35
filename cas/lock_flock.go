//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cas

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, waiting for it. Locks belong to
// the open file, so two opens of one path conflict even in one process, and
// the kernel drops them when the process dies.
func lockFile(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// lockFileShared takes a shared flock on f, waiting for any exclusive one.
func lockFileShared(f *os.File) error { return flock(f, syscall.LOCK_SH) }

// unlockFile releases lockFile's or lockFileShared's lock.
func unlockFile(f *os.File) error { return flock(f, syscall.LOCK_UN) }

// tryLockFile takes an exclusive flock on f if no one holds one.
func tryLockFile(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
