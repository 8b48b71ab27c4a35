//go:build !unix

package retention

import "os"

// allocated returns fi's size: this platform does not report blocks.
func allocated(fi os.FileInfo) int64 { return allocatedOr(fi, 0, false) }
