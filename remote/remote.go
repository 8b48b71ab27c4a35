package remote

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/gofrs/flock"
)

// HeadFormat is the version of the HEAD object's JSON.
const HeadFormat = 1

// Head is a session's HEAD object.
type Head struct {
	Format    int       `json:"format"`
	Session   string    `json:"session"`
	Index     string    `json:"index"`      // key of the index snapshot
	IndexSize int64     `json:"index_size"` // compressed bytes
	IndexSum  string    `json:"index_sum"`  // BLAKE3-256 of the uncompressed db
	Packs     []PackRef `json:"packs"`      // every pack holding a blob the index names
	Workspace string    `json:"workspace"`  // where the session was captured
	Turns     int       `json:"turns"`      // active turns
	Updated   string    `json:"updated"`    // RFC 3339, the writer's clock
	Host      string    `json:"host"`
	ForkOf    string    `json:"fork_of,omitempty"` // the session this one forked from
	// RepackedFrom is set by a collection that rewrote this HEAD to name
	// new packs (repack.go): the ETag of the HEAD its writer last wrote.
	RepackedFrom string `json:"repacked_from,omitempty"`
}

// PackRef names a pack and says how to read its trailer.
type PackRef struct {
	Key     string `json:"key"`
	Size    int64  `json:"size"`
	Entries int    `json:"entries"`
}

func headKey(session string) string { return "sessions/" + session + "/HEAD" }

// sessionOfHead returns the session whose HEAD is at key, if key is one.
func sessionOfHead(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "sessions/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/HEAD")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// Remote is a store's view of one remote.
type Remote struct {
	b     backend.Backend
	url   string
	store string
	db    *sql.DB
	blobs *cas.Disk
	lock  *flock.Flock
	// Progress, when set, is told the bytes uploaded or fetched so far.
	Progress func(done int64)
	done     int64
	// condemned are the packs the collector's state lists (sync reads it).
	condemned map[string]string
	// present caches, for one Sync, whether a pack this store's records
	// name still exists on the remote (see packPresent).
	present map[string]bool
}

// Open opens store's view of the remote in backend b, named url in the
// store's records.
func Open(ctx context.Context, store, url string, b backend.Backend) (*Remote, error) {
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, store)
	if err != nil {
		blobs.Close()
		return nil, err
	}
	return &Remote{b: b, url: url, store: store, db: db, blobs: blobs,
		lock: flock.New(filepath.Join(store, "remote.lock"))}, nil
}

// OpenConfig opens the remote cfg names.
func OpenConfig(ctx context.Context, store string, cfg Config) (*Remote, error) {
	b, err := cfg.Backend()
	if err != nil {
		return nil, err
	}
	return Open(ctx, store, cfg.URL, b)
}

// OpenStore opens the remote store is configured with (LoadConfig:
// $CKPT_REMOTE, else STORE/config.json), creating the store directory
// when there is none yet. It fails wrapping ErrNoRemote when no remote is
// configured.
func OpenStore(ctx context.Context, store string) (*Remote, error) {
	cfg, err := LoadConfig(store)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, err
	}
	return OpenConfig(ctx, store, cfg)
}

// Backend returns the remote's backend.
func (r *Remote) Backend() backend.Backend { return r.b }

// Close releases the store's files.
func (r *Remote) Close() error { return errors.Join(r.db.Close(), r.blobs.Close()) }

func (r *Remote) progress(n int64) {
	r.done += n
	if r.Progress != nil {
		r.Progress(r.done)
	}
}

// ErrBusy is returned by Lock when another sync or pull of the store runs.
var ErrBusy = errors.New("another ckpt sync or pull of this store is running")

// Lock takes the store's sync lock, waiting for it when wait is set and
// failing with ErrBusy otherwise. Sync and Pull take it themselves when the
// caller has not.
func (r *Remote) Lock(ctx context.Context, wait bool) (unlock func(), err error) {
	if wait {
		if err := r.lock.Lock(); err != nil {
			return nil, fmt.Errorf("remote: lock: %w", err)
		}
	} else {
		ok, err := r.lock.TryLock()
		if err != nil {
			return nil, fmt.Errorf("remote: lock: %w", err)
		}
		if !ok {
			return nil, ErrBusy
		}
	}
	return func() { r.lock.Unlock() }, nil
}
