package retention

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Usage is what a store directory takes on disk, counted as du counts it:
// the blocks allocated to every file, not their apparent sizes.
type Usage struct {
	// Total is every file under the store: blobs.db and its WAL, object
	// files, every session's index and WAL, config, locks and temp files.
	Total int64
	// Sessions is, per session id, the bytes of its directory.
	Sessions map[string]int64
}

// DiskUsage walks the store directory and counts the blocks of every file.
// A store that does not exist yet takes nothing.
func DiskUsage(store string) (Usage, error) {
	u := Usage{Sessions: map[string]int64{}}
	sessions := filepath.Join(store, "sessions")
	err := filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n := allocated(fi)
		u.Total += n
		if rel, err := filepath.Rel(sessions, p); err == nil && !strings.HasPrefix(rel, "..") {
			if id, _, ok := strings.Cut(filepath.ToSlash(rel), "/"); ok {
				u.Sessions[id] += n
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Usage{}, fmt.Errorf("retention: disk usage of %s: %w", store, err)
	}
	return u, nil
}

// allocatedOr returns the bytes fi's file takes on disk when the platform
// says, and its size otherwise.
func allocatedOr(fi os.FileInfo, blocks int64, ok bool) int64 {
	if ok {
		return blocks * 512
	}
	return fi.Size()
}
