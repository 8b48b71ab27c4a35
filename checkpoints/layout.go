package checkpoints

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
)

// A store directory holds the blob store shared by all sessions and one
// index directory per session:
//
//	STORE/blobs/                the cas.Disk
//	STORE/sessions/ID/index.db  each session's Index
//	STORE/catalog.db            the catalog: a summary of each session (see Catalog)
//	STORE/registry/ID           the sessions the store has (see RegistryDir)
//	STORE/config.json           retention settings (package retention)

// ErrBadSession is wrapped when a session id is not a safe name.
var ErrBadSession = errors.New("session id must be 1-128 letters, digits, '.', '_' or '-', not starting with '.'")

// ValidSession reports whether id is usable as a session id: it names a
// directory, so it cannot hold a separator or be "." or "..". It is 1-128
// ASCII letters, digits, '.', '_' or '-', not starting with '.'. (A loop,
// not a regexp: compiling the 128-way repetition cost every process a
// quarter of a millisecond and 1,700 allocations at start-up.)
func ValidSession(id string) bool {
	if len(id) == 0 || len(id) > 128 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// SessionDir returns the directory of session id in store.
func SessionDir(store, id string) string { return filepath.Join(store, "sessions", id) }

// BlobDir returns the blob store's directory in store.
func BlobDir(store string) string { return filepath.Join(store, "blobs") }

// LinkFile is the file that makes a directory of the store's sessions
// directory a link rather than a session: a directory holding it and no
// index stands for the session the file names (a Claude Code conversation
// forked by a rewind, whose hook events are recorded into the session it
// continues; cmd/ckpt writes and reads it). A link holds no turns and
// references no blob: listings, retention, gc and verify pass over it.
const LinkFile = "claude-continues"

// IsLink reports whether dir, a directory of the store's sessions
// directory, is a link (see LinkFile): it holds LinkFile and no index.
func IsLink(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, LinkFile)); err != nil {
		return false
	}
	_, err := os.Lstat(filepath.Join(dir, FileName))
	return errors.Is(err, fs.ErrNotExist)
}

// IsSessionEntry reports whether e, an entry of the store's sessions
// directory, is a session: named by a valid session id, and a directory
// or a symbolic link to one (a session moved to another disk and linked
// back is used through the link by every command, so listings, and gc's
// mark above all, must see it too), that is not a link (IsLink).
func IsSessionEntry(sessions string, e fs.DirEntry) bool {
	if !ValidSession(e.Name()) {
		return false
	}
	dir := filepath.Join(sessions, e.Name())
	if !e.IsDir() {
		if e.Type()&fs.ModeSymlink == 0 {
			return false
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return false
		}
	}
	return !IsLink(dir)
}

// Sessions lists the ids of the sessions in store that have an index,
// sorted. A store with no sessions yet gives an empty list.
func Sessions(store string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(store, "sessions"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoints: sessions: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !IsSessionEntry(filepath.Join(store, "sessions"), e) {
			continue
		}
		if _, err := os.Stat(filepath.Join(store, "sessions", e.Name(), FileName)); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// storeEntries are the names ckpt keeps in a store directory. A store
// directory holding nothing else is ckpt's own.
var storeEntries = map[string]bool{
	"blobs": true, "sessions": true, "config.json": true, "retention.stamp": true, "retention.lock": true,
	"workspaces": true, RegistryDir: true, "quota.over": true, catalogFile: true, catalogFile + "-wal": true, catalogFile + "-shm": true,
	// the hook server (agent/hook) and background sync (cmd/ckpt/hook_bg.go)
	"hook-server.json": true, "hook-server.lock": true, "hook-server.log": true,
	"sync-bg.lock": true, "sync.log": true, "sync.log.1": true, "hook-server.log.1": true,
	// cmd/ckpt's install (install.go, agents_install.go)
	"install.lock": true, "install-dirs.json": true,
	// remote/ (db.go, remote.go)
	"remote.db": true, "remote.db-wal": true, "remote.db-shm": true, "remote.lock": true,
}

// WorkspacesDir is the store directory of workspace markers (one small
// file per workspace naming its root; see controller.Store.Locate).
const WorkspacesDir = "workspaces"

// tightenMarkers makes a directory of markers (the workspace markers, the
// session registry) 0700 and, when it was wider, each marker 0600 (they
// name directories and sessions on this machine).
func tightenMarkers(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&0o077 == 0)) {
		return nil
	}
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := tighten(filepath.Join(dir, e.Name()), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return tighten(dir, 0o700)
}

// CheckStore makes store private as far as it is ckpt's to change: the
// sessions directory is set to 0700 when wider (each session's directory
// is tightened by Open), and so is the store directory itself when it
// holds only ckpt's entries. A store directory that holds other things
// (CKPT_HOME pointed at a shared directory) is not changed: when other
// users can read it, CheckStore returns a warning for people.
func CheckStore(store string) (warning string, err error) {
	if err := tighten(filepath.Join(store, "sessions"), 0o700); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("checkpoints: store %s: %w", store, err)
	}
	for _, dir := range []string{WorkspacesDir, RegistryDir} {
		if err := tightenMarkers(filepath.Join(store, dir)); err != nil {
			return "", fmt.Errorf("checkpoints: store %s: %w", store, err)
		}
	}
	if runtime.GOOS == "windows" {
		return "", nil
	}
	fi, err := os.Stat(store)
	if err != nil {
		return "", fmt.Errorf("checkpoints: store %s: %w", store, err)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return "", nil
	}
	ents, err := os.ReadDir(store)
	if err != nil {
		return "", fmt.Errorf("checkpoints: store %s: %w", store, err)
	}
	own := true
	for _, e := range ents {
		own = own && storeEntries[e.Name()]
	}
	if own {
		if err := os.Chmod(store, 0o700); err != nil {
			return "", fmt.Errorf("checkpoints: store %s: %w", store, err)
		}
		return "", nil
	}
	if perm&0o044 != 0 {
		return fmt.Sprintf("the store %s is readable by other users (mode %04o) and holds more than ckpt's files, so ckpt leaves its mode alone; its own files are private", store, perm), nil
	}
	return "", nil
}
