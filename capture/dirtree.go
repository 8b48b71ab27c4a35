package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Whole-directory helpers for rewinds that change a path's type (a file
// where a directory was, or the reverse). Like every other access they go
// through the root handle one element at a time and follow no link.

// openRealDir opens rel, which must be a real directory reached through
// real directories.
func (w *Workspace) openRealDir(rel string) (dir, error) {
	if err := protect(rel); err != nil {
		return dir{}, fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, e, err := w.openDir(strings.Split(rel, "/"), false)
	if err != nil {
		return dir{}, fmt.Errorf("capture: %s: %w", rel, err)
	}
	if e != nil {
		if e.Kind == Absent {
			return dir{}, fmt.Errorf("capture: %s: %w", rel, fs.ErrNotExist)
		}
		return dir{}, fmt.Errorf("capture: %s: %w", rel, e.Reason)
	}
	return d, nil
}

// readDir lists an open directory.
func readDir(r *os.Root) ([]fs.DirEntry, error) {
	f, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// DirFiles lists the regular files (workspace-relative) under rel, which
// must be a real directory reached through real directories; nothing is
// followed. It fails with an error wrapping ErrSymlink or ErrNotRegular
// when rel is not such a directory or holds a symlink or special file.
func (w *Workspace) DirFiles(rel string) ([]string, error) {
	d, err := w.openRealDir(rel)
	if err != nil {
		return nil, err
	}
	defer d.close()
	var files []string
	var walk func(r *os.Root, at string) error
	walk = func(r *os.Root, at string) error {
		ents, err := readDir(r)
		if err != nil {
			return fmt.Errorf("capture: %s: %w", at, err)
		}
		for _, e := range ents {
			p := at + "/" + e.Name()
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				return fmt.Errorf("capture: %s: %w", p, ErrSymlink)
			case t.IsDir():
				sub, err := openChild(r, e.Name())
				if err != nil {
					return fmt.Errorf("capture: %s: %w", p, err)
				}
				err = walk(sub, p)
				sub.Close()
				if err != nil {
					return err
				}
			case t.IsRegular():
				files = append(files, p)
			default:
				return fmt.Errorf("capture: %s: %w", p, ErrNotRegular)
			}
		}
		return nil
	}
	if err := walk(d.r, rel); err != nil {
		return nil, err
	}
	return files, nil
}

// RemoveEmptyDir removes rel, a real directory holding nothing but
// (recursively) empty directories. It fails, removing nothing more, when
// anything else is in it.
func (w *Workspace) RemoveEmptyDir(rel string) error {
	files, err := w.DirFiles(rel)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return fmt.Errorf("capture: %s: directory is not empty", rel)
	}
	d, err := w.openRealDir(rel)
	if err != nil {
		return err
	}
	// Empty each directory from inside its own handle; removing a
	// directory that is not empty fails, so nothing that appeared
	// meanwhile is lost.
	var rm func(r *os.Root, at string) error
	rm = func(r *os.Root, at string) error {
		ents, err := readDir(r)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				return fmt.Errorf("%s: directory is not empty", at)
			}
			sub, err := openChild(r, e.Name())
			if err != nil {
				return err
			}
			err = rm(sub, at+"/"+e.Name())
			sub.Close()
			if err != nil {
				return err
			}
			if err := r.Remove(e.Name()); err != nil {
				return err
			}
		}
		return nil
	}
	err = rm(d.r, rel)
	d.close()
	if err != nil {
		return fmt.Errorf("capture: remove %s: %w", rel, err)
	}
	p, base, e, err := w.parent(rel, false)
	if err != nil {
		return fmt.Errorf("capture: remove %s: %w", rel, err)
	}
	if e != nil {
		return fmt.Errorf("capture: remove %s: its parent changed", rel)
	}
	defer p.close()
	fi, err := p.r.Lstat(base)
	if err != nil {
		return fmt.Errorf("capture: remove %s: %w", rel, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("capture: remove %s: %w", rel, errSwapped)
	}
	if err := p.r.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("capture: remove %s: %w", rel, err)
	}
	return nil
}

// MakeParents creates rel's missing parent directories, refusing
// (ErrSymlink, ErrNotRegular) to pass through a symlink or a non-directory.
func (w *Workspace) MakeParents(rel string) error {
	if err := protect(rel); err != nil {
		return fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, _, e, err := w.parent(rel, true)
	if err != nil {
		return fmt.Errorf("capture: %s: %w", rel, err)
	}
	if e != nil {
		return fmt.Errorf("capture: %s: %w", rel, e.Reason)
	}
	d.close()
	return nil
}

// IsDir reports whether rel and each of its parents is a real directory
// (not a symlink).
func (w *Workspace) IsDir(rel string) bool {
	d, err := w.openRealDir(rel)
	if err != nil {
		return false
	}
	d.close()
	return true
}
