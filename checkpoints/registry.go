package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/migrations"
)

// The registry (STORE/registry/) is how the store knows which sessions it
// has, apart from their index files: one empty file per session, named by
// its id, made when the session is first opened and removed only when the
// session is removed on purpose (retention, `ckpt sessions rm`). A
// registered session whose index is missing, empty or unreadable is an
// error for whoever opens it, and retention takes it for a session that
// may reference anything: a lost index.db never reads as an empty session
// again, and its blobs stay until the session is removed by force.
//
// Files, not rows of the catalog: the catalog is a cache that is deleted
// and rebuilt when it cannot be read, while a registration is a fact;
// a marker is made with one create and a directory sync, cannot be half
// written, survives the loss of the session's whole directory, and costs
// the hook's hot path one stat.
//
// A store made by an older ckpt has no registry: the first process that
// needs it registers every session directory there is, then writes
// registryDone; until that file exists every process does the same
// (idempotent) work. A session directory without a registration (one an
// older ckpt made since, a fork or pull renamed into place just now) is a
// session all the same: the registry only adds sessions, never hides one.
const (
	RegistryDir  = "registry"
	registryDone = ".complete"
)

// ErrNoIndex is wrapped when a session of the store has no readable index:
// its index.db is missing (an interrupted copy, a deleted file) or empty.
// Nothing takes such a session for one that holds nothing. The error is a
// *NoIndexError.
var ErrNoIndex = errors.New("session has no readable index.db")

// NoIndexError names the session without a readable index.
type NoIndexError struct {
	Session string
	Dir     string
	Reason  string // "missing", "empty or not a file", or the stat error
}

func (e *NoIndexError) Error() string {
	return fmt.Sprintf("%s: %v (%s)", e.Dir, ErrNoIndex, e.Reason)
}

// Is makes errors.Is(err, ErrNoIndex) hold.
func (e *NoIndexError) Is(target error) bool { return target == ErrNoIndex }

// CheckIndex returns a *NoIndexError when session id of store has no
// index file that SQLite could have written: none, an empty or truncated
// one (shorter than a database header), or not a regular file.
func CheckIndex(store, id string) error {
	dir := SessionDir(store, id)
	path := filepath.Join(dir, FileName)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &NoIndexError{Session: id, Dir: dir, Reason: "missing"}
	case err != nil:
		return &NoIndexError{Session: id, Dir: dir, Reason: err.Error()}
	case !fi.Mode().IsRegular() || fi.Size() == 0:
		return &NoIndexError{Session: id, Dir: dir, Reason: "empty or not a file"}
	case !migrations.Created(path):
		return &NoIndexError{Session: id, Dir: dir, Reason: fmt.Sprintf("not a database: %d bytes, shorter than its header", fi.Size())}
	}
	return nil
}

// OpenSession opens session id of store. With create set, a session the
// store has never had is created (see Open) and registered; without it,
// or when the store has had the session (it is registered, or its
// directory holds an index.db file, even an empty one), the session's
// index must be there: else the error is a *NoIndexError, and no new
// index is made in its place.
func OpenSession(ctx context.Context, store, id string, create bool, opts ...Option) (*Index, error) {
	if !ValidSession(id) {
		return nil, fmt.Errorf("checkpoints: session %q: %w", id, ErrBadSession)
	}
	reg, err := isRegistered(store, id)
	if err != nil {
		return nil, err
	}
	_, serr := os.Lstat(filepath.Join(SessionDir(store, id), FileName))
	if reg || !create || serr == nil { // a session the store has had (see HasSession)
		if err := CheckIndex(store, id); err != nil {
			return nil, err
		}
	}
	x, err := Open(ctx, SessionDir(store, id), opts...)
	if err != nil {
		return nil, err
	}
	if !reg {
		if err := Register(store, id); err != nil {
			x.Close()
			return nil, err
		}
	}
	return x, nil
}

// Registered returns the ids of the sessions the store's registry holds,
// sorted; the first call on a store made by an older ckpt registers every
// session directory it has.
func Registered(store string) ([]string, error) {
	if err := migrateRegistry(store); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(store, RegistryDir))
	if err != nil {
		return nil, fmt.Errorf("checkpoints: registry: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && ValidSession(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Register records that the store has session id. It is idempotent.
func Register(store, id string) error {
	if err := migrateRegistry(store); err != nil {
		return err
	}
	return mark(filepath.Join(store, RegistryDir), id)
}

// Unregister forgets session id: for its removal on purpose, before its
// directory goes. It is idempotent.
func Unregister(store, id string) error {
	if !ValidSession(id) {
		return fmt.Errorf("checkpoints: session %q: %w", id, ErrBadSession)
	}
	if err := migrateRegistry(store); err != nil {
		return err
	}
	dir := filepath.Join(store, RegistryDir)
	err := os.Remove(filepath.Join(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("checkpoints: unregister %s: %w", id, err)
	}
	return nil
}

// isRegistered reports whether the registry holds session id.
func isRegistered(store, id string) (bool, error) {
	if err := migrateRegistry(store); err != nil {
		return false, err
	}
	_, err := os.Lstat(filepath.Join(store, RegistryDir, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("checkpoints: registry: %w", err)
}

// migrateRegistry makes the registry of a store that has none (made by an
// older ckpt): every session directory is registered, whatever it holds,
// then registryDone is written. A store with registryDone is left alone.
func migrateRegistry(store string) error {
	dir := filepath.Join(store, RegistryDir)
	if _, err := os.Lstat(filepath.Join(dir, registryDone)); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoints: registry: %w", err)
	}
	sessions := filepath.Join(store, "sessions")
	ents, err := os.ReadDir(sessions)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoints: registry: %w", err)
	}
	for _, e := range ents {
		if IsSessionEntry(sessions, e) {
			if err := mark(dir, e.Name()); err != nil {
				return err
			}
		}
	}
	if err := mark(dir, registryDone); err != nil {
		return err
	}
	return nil
}

// mark makes the empty file name in dir, durably, unless it exists.
func mark(dir, name string) error {
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("checkpoints: register %s: %w", name, err)
	}
	return nil
}

// HasSession reports whether the store has had session id: it is registered,
// or its directory holds an index.db file (readable or not). A session
// that is not known may be created; one that is known is opened, and its
// lost index is an error.
func HasSession(store, id string) (bool, error) {
	if !ValidSession(id) {
		return false, nil
	}
	reg, err := isRegistered(store, id)
	if err != nil || reg {
		return reg, err
	}
	_, err = os.Lstat(filepath.Join(SessionDir(store, id), FileName))
	return err == nil, nil
}
