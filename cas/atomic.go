package cas

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/internal/atomicfile"
)

// tempFile is the one way this package writes a file. It is created in the
// store's tmp/ directory and holds an exclusive lock for as long as it is
// open, which tells OpenDisk's cleaner that its writer is alive. The caller
// writes it, calls sync (outside any store lock: that is the slow part), and
// then either commit, which renames it to its final path and fsyncs that
// directory, or discard.
//
// Unlike the textbook order (sync, close, rename), commit renames before it
// closes: closing first would drop the lock and let a cleaner in another
// process remove the file under us.
type tempFile struct {
	f *os.File
}

// createTemp creates and locks a new temp file in dir.
func createTemp(dir string) (*tempFile, error) {
	for {
		f, err := os.CreateTemp(dir, "blob-*")
		if err != nil {
			return nil, err
		}
		if err := lockFile(f); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		// A cleaner may have taken the lock and removed the file between
		// CreateTemp and lockFile; then start again.
		fi, err1 := f.Stat()
		st, err2 := os.Stat(f.Name())
		if err1 == nil && err2 == nil && os.SameFile(fi, st) {
			return &tempFile{f: f}, nil
		}
		f.Close()
	}
}

func (t *tempFile) Write(p []byte) (int, error) { return t.f.Write(p) }

// sync makes the written bytes durable and returns the file's size.
func (t *tempFile) sync() (int64, error) {
	if err := t.f.Sync(); err != nil {
		return 0, err
	}
	fi, err := t.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// commit renames the synced file to path and makes the rename durable. The
// temp file is gone afterwards whether or not commit succeeds.
func (t *tempFile) commit(path string) error {
	if err := os.Rename(t.f.Name(), path); err != nil {
		t.discard()
		return err
	}
	err := syncDir(filepath.Dir(path))
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// discard removes the file, still holding its lock, and closes it.
func (t *tempFile) discard() {
	os.Remove(t.f.Name())
	t.f.Close()
}

// syncDir makes changes to dir's entries durable.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// mkdir creates dir if it is missing and makes its creation durable.
func mkdir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if os.IsExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// cleanTemp removes every file in dir whose lock it can take: files left by
// writers that died. Files of live writers stay locked and are skipped.
func cleanTemp(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		ok, err := tryLockFile(f)
		if ok {
			err = os.Remove(path)
			if os.IsNotExist(err) {
				err = nil
			}
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("clean %s: %w", path, err)
		}
	}
	return nil
}
