//go:build !linux

package capture

import (
	"errors"
	"io/fs"
	"os"
)

// Only Linux has syncfs: elsewhere staged files are fsynced one by one.
func syncfsDurable(*os.File) bool { return false }

func syncfs(*os.File) error { return errors.ErrUnsupported }

func sameDevice(a, b fs.FileInfo) bool { return false }
