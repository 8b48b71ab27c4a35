package capture

import "os"

// syncDir does nothing: Windows cannot fsync a directory, and its file
// systems journal renames themselves.
func syncDir(*os.File) error { return nil }
