// Package paths holds the path rule the CLI and the hook share.
package paths

import (
	"path/filepath"
	"strings"
)

// Within reports whether p is root or below it.
func Within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
