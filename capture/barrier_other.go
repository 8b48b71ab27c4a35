//go:build !linux

package capture

import (
	"errors"
	"os"
)

// Only Linux has syncfs: elsewhere staged files are fsynced one by one.
func syncfsDurable(*os.File) bool { return false }

func syncfs(*os.File) error { return errors.ErrUnsupported }
