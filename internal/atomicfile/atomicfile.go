// Package atomicfile writes whole files atomically and durably: a reader
// (or a crash) sees the old content or the new, never a mix or nothing.
// It is the one way ckpt writes a small file in place: store markers and
// stamps, agent settings files. Blobs, which are streamed and must stay
// locked while written, use cas's own temp files, which sync directories
// with SyncDir.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFile replaces path with data and permission bits perm: a temp file
// in the same directory is written, synced, closed and renamed over path,
// and the directory is synced so the rename survives a power cut. On any
// error the temp file is removed and path is unchanged. Errors name path.
func WriteFile(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir makes changes to dir's entries (creations, renames, removals)
// durable. Windows cannot fsync a directory and does not need to.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
