package setup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/paths"
)

// installDirsFile, in the store, lists the directories install created
// for agents' configuration, so that uninstall removes those it leaves
// empty, and only those.
const installDirsFile = "install-dirs.json"

// mkdir creates dir and its missing parents, recording in the store the
// ones it created.
func (o *Options) mkdir(dir string) error {
	// Only directories below the workspace or the home directory are
	// recorded, never those themselves (nor what holds them).
	home, _ := os.UserHomeDir()
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d || d == home || d == o.Workspace {
			break
		}
		made = append(made, d)
	}
	if !paths.Within(o.Workspace, dir) && (home == "" || !paths.Within(home, dir)) {
		made = nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if len(made) == 0 || o.Store == "" {
		return nil
	}
	dirs := InstallDirs(o.Store)
	for _, d := range made {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return writeInstallDirs(o.Store, dirs)
}

// InstallDirs are the directories install created for agents'
// configuration that uninstall has not removed yet, as the store records
// them.
func InstallDirs(store string) []string {
	var dirs []string
	if b, err := os.ReadFile(filepath.Join(store, installDirsFile)); err == nil {
		json.Unmarshal(b, &dirs)
	}
	return dirs
}

func writeInstallDirs(store string, dirs []string) error {
	if len(dirs) == 0 {
		if err := os.Remove(filepath.Join(store, installDirsFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(dirs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(store, installDirsFile), append(b, '\n'), 0o600)
}

// removeInstallDirs removes the directories install created under root
// (the workspace, or the home directory for User) that are now empty,
// deepest first, and returns them; a directory that holds anything stays,
// and stays recorded, as do those elsewhere.
func (o *Options) removeInstallDirs(root string) []string {
	dirs := InstallDirs(o.Store)
	if len(dirs) == 0 {
		return nil
	}
	// Deepest first: a parent empties once its children go.
	slices.SortFunc(dirs, func(x, y string) int { return len(y) - len(x) })
	var kept, removed []string
	for _, d := range dirs {
		if !paths.Within(root, d) {
			kept = append(kept, d)
			continue
		}
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && fi.IsDir() && os.Remove(d) == nil {
			removed = append(removed, d)
			continue
		}
		kept = append(kept, d)
	}
	if err := writeInstallDirs(o.Store, kept); err != nil {
		o.say("ckpt: warning: %s: %s", installDirsFile, msg.OneLine(err))
	}
	return removed
}
