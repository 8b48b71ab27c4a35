//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package cas

import (
	"os"
	"time"
)

// Without flock, writers in other processes cannot be told apart from dead
// ones, so locks are no-ops and the temp-file cleaner goes by age alone.

func lockFile(f *os.File) error { return nil }

func lockFileShared(f *os.File) error { return nil }

func unlockFile(f *os.File) error { return nil }

// staleAge is how old a temp file must be before the cleaner takes it for
// abandoned.
const staleAge = time.Hour

func tryLockFile(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	return time.Since(fi.ModTime()) > staleAge, nil
}
