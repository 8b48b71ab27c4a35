//go:build !linux

package capture

import (
	"io"
	"io/fs"
	"os"
)

// contentReader returns a reader of the regular file f: the file itself
// where ckpt does not look for holes (they read as zeros all the same).
func contentReader(f *os.File, _ fs.FileInfo) io.Reader { return f }
