package cas

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
)

// The store is private to its owner: directories 0700, files 0600,
// whatever the umask, and tightened when an older or foreign tool left
// them wider. Windows has no such bits (its ACLs come from the parent).

// privateDir sets dir's mode to 0700 when it grants anything to group or
// others.
func privateDir(dir string) error {
	return tighten(dir, 0o700)
}

// privateFile creates path empty with mode 0600 if it is missing, and sets
// the mode of an existing one to 0600 when it is wider.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return tighten(path, 0o600)
}

// privateDB makes the SQLite database at path private before SQLite opens
// it: SQLite creates a new database with mode 0644 less the umask, and
// gives its -wal and -shm files the database's own mode, so the database
// is created here with 0600 and existing -wal/-shm files are tightened.
func privateDB(path string) error {
	if err := privateFile(path); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := tighten(path+suffix, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// tighten sets name's permission bits to perm when they grant more than
// the owner's.
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
