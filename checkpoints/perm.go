package checkpoints

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// A session directory is private to its owner: 0700, and index.db with
// its -wal and -shm 0600, whatever the umask. Windows has no such bits.

// privateIndex makes dir and the index database in it private before
// SQLite opens it: SQLite creates a new database with mode 0644 less the
// umask and gives its -wal and -shm files the database's mode, so the
// database is created here with 0600, and modes left wider by an older
// ckpt or another tool are tightened.
func privateIndex(dir string) error {
	if err := tighten(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	// The index with its -wal and -shm, and the lock files beside it.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := tighten(filepath.Join(dir, e.Name()), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// createPrivate creates path empty with mode 0600 (whatever the umask),
// failing if it exists: a database file SQLite will fill (VACUUM INTO
// accepts an empty file).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return tighten(path, 0o600)
}

// tighten sets name's permission bits to perm when they grant anything to
// group or others.
func tighten(name string, perm fs.FileMode) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return os.Chmod(name, perm)
}
