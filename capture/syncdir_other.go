//go:build !windows

package capture

import "os"

// syncDir makes the changes to an open directory's entries durable.
func syncDir(d *os.File) error { return d.Sync() }
