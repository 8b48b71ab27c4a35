package retention

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/gofrs/flock"
)

// ErrNoIndex is wrapped when a session has no readable index: it is
// registered but its directory is gone, or its index.db is missing (an
// interrupted copy, a deleted file) or empty. Retention never takes such
// a session for one that references nothing. The error is a *NoIndexError.
var ErrNoIndex = checkpoints.ErrNoIndex

// NoIndexError names the session without a readable index.
type NoIndexError = checkpoints.NoIndexError

// sessionDirs lists every session of the store, sorted: each registered
// session (see checkpoints.Registered) and each session directory, with
// or without an index. Directories whose names are not session ids (such
// as the .removed-ID left by an interrupted removal) are not sessions.
func sessionDirs(store string) ([]string, error) {
	out, err := checkpoints.Registered(store)
	if err != nil {
		return nil, fmt.Errorf("retention: sessions: %w", err)
	}
	ents, err := os.ReadDir(filepath.Join(store, "sessions"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("retention: sessions: %w", err)
	}
	for _, e := range ents {
		if checkpoints.IsSessionEntry(filepath.Join(store, "sessions"), e) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// SessionDirs lists every session of the store, registered or with a
// directory, with or without a readable index, sorted by id.
func SessionDirs(store string) ([]string, error) { return sessionDirs(store) }

// OpenSession opens session id's index for reading what it holds. It fails
// with a *NoIndexError, rather than creating an empty index, when the
// session's index.db is missing or empty.
func OpenSession(ctx context.Context, store, id string) (*checkpoints.Index, error) {
	return openSession(ctx, store, id)
}

// openSession opens session id's index, failing with an error wrapping
// ErrNoIndex, rather than creating an empty index, when its index.db is
// missing or empty.
func openSession(ctx context.Context, store, id string) (*checkpoints.Index, error) {
	return checkpoints.OpenSession(ctx, store, id, false)
}

// eachSession opens every session index in store in turn and calls fn. It
// stops at the first error: a session that cannot be read, or a session
// directory without an index, is never taken for empty.
func eachSession(ctx context.Context, store string, fn func(id string, x *checkpoints.Index) error) error {
	ids, err := sessionDirs(store)
	if err != nil {
		return err
	}
	for _, id := range ids {
		x, err := openSession(ctx, store, id)
		if err != nil {
			return fmt.Errorf("retention: session %s: %w", id, err)
		}
		err = fn(id, x)
		if cerr := x.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("retention: session %s: %w", id, err)
		}
	}
	return nil
}

// summaries returns the catalog's summary of every session directory of
// the store (see checkpoints.Catalog), failing at the first session whose
// index cannot be read: such a session is never taken for empty.
func summaries(ctx context.Context, store string) ([]checkpoints.Summary, error) {
	cat, err := checkpoints.OpenCatalog(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	defer cat.Close()
	ss, err := cat.Sessions(ctx, func(ctx context.Context, id string) (*checkpoints.Index, error) {
		return openSession(ctx, store, id)
	})
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	for _, s := range ss {
		if s.Err != nil {
			return nil, fmt.Errorf("retention: session %s: %w", s.ID, s.Err)
		}
	}
	return ss, nil
}

// Summaries returns the catalog's summary of every session directory of
// the store, sorted by id; a session whose index cannot be read has its
// Err set (a *NoIndexError when index.db is missing or empty) and does
// not hide the others.
func Summaries(ctx context.Context, store string) ([]checkpoints.Summary, error) {
	cat, err := checkpoints.OpenCatalog(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	defer cat.Close()
	return cat.Sessions(ctx, func(ctx context.Context, id string) (*checkpoints.Index, error) {
		return openSession(ctx, store, id)
	})
}

// Load reads what Evaluate needs of every session of the store, from the
// catalog where it vouches for an index.
func Load(ctx context.Context, store string) ([]Session, error) {
	ss, err := summaries(ctx, store)
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(ss))
	for _, s := range ss {
		out = append(out, Session{ID: s.ID, Turns: s.Turns, LastUse: s.LastUse, Undo: s.Undo})
	}
	return out, nil
}

// BlobSizes returns the stored size of every blob.
func BlobSizes(ctx context.Context, blobs cas.Store) (map[cas.ID]int64, error) {
	sizes, _, err := blobInfo(ctx, blobs)
	return sizes, err
}

// blobInfo returns the stored size of every blob, and the base of every
// blob stored as a delta.
func blobInfo(ctx context.Context, blobs cas.Store) (map[cas.ID]int64, map[cas.ID]cas.ID, error) {
	sizes, bases := map[cas.ID]int64{}, map[cas.ID]cas.ID{}
	err := blobs.Walk(ctx, func(i cas.Info) error {
		sizes[i.ID] = i.Stored
		if i.Base != (cas.ID{}) {
			bases[i.ID] = i.Base
		}
		return nil
	})
	return sizes, bases, err
}

// footprinter is what a blob store in an SQLite file implements
// (cas.Disk).
type footprinter interface {
	Footprint(ctx context.Context) (cas.Footprint, error)
}

// PlanFor loads the store and evaluates the policy at now. The quota is
// weighed against the bytes the store takes on disk (DiskUsage) once the
// collection that follows pruning has compacted blobs.db: its free pages
// and WAL are not counted, and each blob carries its share of SQLite's
// overhead (its row, index entries, page slack), which goes with it.
// Counting that overhead as fixed made a quota over many small blobs prune
// nearly every turn, as if only their compressed bytes were freed.
func PlanFor(ctx context.Context, store string, blobs cas.Store, p Policy, now time.Time) (Plan, error) {
	sessions, err := Load(ctx, store)
	if err != nil {
		return Plan{}, err
	}
	sizes, bases, err := blobInfo(ctx, blobs)
	if err != nil {
		return Plan{}, err
	}
	u, err := DiskUsage(store)
	if err != nil {
		return Plan{}, err
	}
	other := u.Total
	for _, size := range sizes {
		other -= size
	}
	for i := range sessions {
		sessions[i].IndexBytes = u.Sessions[sessions[i].ID]
		other -= sessions[i].IndexBytes
	}
	if f, ok := blobs.(footprinter); ok {
		fp, err := f.Footprint(ctx)
		if err != nil {
			return Plan{}, err
		}
		other -= fp.Reclaimable
		if fp.Rows > 0 && len(sizes) > 0 {
			share := fp.Overhead / fp.Rows
			for id := range sizes {
				sizes[id] += share
			}
			other -= share * int64(len(sizes))
		}
	}
	return evaluate(p, now, sessions, sizes, bases, max(other, 0)), nil
}

// Apply carries out a plan: it prunes the turns and removes the sessions it
// names, and compacts the index of each session it pruned. A session whose
// rewind lock another process holds is left for the next run and reported
// in the error.
func Apply(ctx context.Context, store string, plan Plan) error {
	var errs []error
	removed := map[string]bool{}
	for _, id := range plan.Removes() {
		if err := removeDir(store, id); err != nil {
			errs = append(errs, err)
		}
		removed[id] = true
	}
	for id, turns := range plan.Prunes() {
		if removed[id] {
			continue
		}
		x, err := openSession(ctx, store, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := x.Prune(ctx, turns); err != nil {
			errs = append(errs, err)
		} else if err := x.Compact(ctx); err != nil {
			errs = append(errs, err)
		}
		x.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("retention: apply: %w", err)
	}
	return nil
}

// ErrPinned is wrapped by RemoveSession when the session has pinned turns
// and removal was not forced.
var ErrPinned = errors.New("session has pinned turns")

// Removal describes a session RemoveSession removed, or would remove.
type Removal struct {
	Session string `json:"session"`
	Turns   int    `json:"turns"`  // every turn, hidden ones included
	Pinned  []int  `json:"pinned"` // numbers of its pinned turns
	// Unreadable is set when the session has no readable index; only a
	// forced removal removes it.
	Unreadable string `json:"unreadable,omitempty"`
	Removed    bool   `json:"removed"`
}

// RemoveSession removes session id whole: its turns, conversation and undo
// records (its blobs go at the next collection). It refuses, with an error
// wrapping ErrPinned, a session with pinned turns, and a session whose index
// cannot be read (wrapping the reason: ErrNoIndex, or an SQLite error),
// unless force is set. With dryRun it only says what it would remove. It fails with an
// error wrapping checkpoints.ErrNotFound when there is no such session, and
// when another process is rewinding the session.
func RemoveSession(ctx context.Context, store, id string, force, dryRun bool) (Removal, error) {
	r := Removal{Session: id, Pinned: []int{}}
	if !checkpoints.ValidSession(id) {
		return r, fmt.Errorf("retention: session %q: %w", id, checkpoints.ErrBadSession)
	}
	dir := checkpoints.SessionDir(store, id)
	registered, err := checkpoints.Registered(store)
	if err != nil {
		return r, fmt.Errorf("retention: session %s: %w", id, err)
	}
	gone := false // registered, but its directory is gone
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if !slices.Contains(registered, id) {
			return r, fmt.Errorf("retention: session %s: %w", id, checkpoints.ErrNotFound)
		}
		gone = true
	} else {
		unlock, err := lockSession(dir, id)
		if err != nil {
			return r, err
		}
		defer unlock()
	}
	x, err := openSession(ctx, store, id)
	if err == nil {
		var turns []checkpoints.TurnRecord
		turns, err = x.TurnRecords(ctx)
		x.Close()
		r.Turns = len(turns)
		for _, t := range turns {
			if t.Pinned {
				r.Pinned = append(r.Pinned, t.Number)
			}
		}
	}
	if err != nil {
		r.Unreadable = err.Error()
		if !force {
			return r, fmt.Errorf("retention: session %s: cannot read its index, so cannot tell what it holds: %w", id, err)
		}
	}
	if len(r.Pinned) > 0 && !force {
		return r, fmt.Errorf("retention: session %s: %w (%s)", id, ErrPinned, turnList(r.Pinned))
	}
	if dryRun {
		return r, nil
	}
	if gone {
		err = checkpoints.Unregister(store, id)
	} else {
		err = trashDir(store, dir, id)
	}
	if err != nil {
		return r, err
	}
	r.Removed = true
	return r, nil
}

func turnList(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	if len(ns) == 1 {
		return "turn " + parts[0]
	}
	return "turns " + strings.Join(parts, ", ")
}

// lockSession takes the session's rewind lock, so no rewind of it runs
// while it is removed.
func lockSession(dir, id string) (unlock func(), err error) {
	lock := flock.New(filepath.Join(dir, "ops.lock"))
	ok, err := lock.TryLock()
	if err != nil || !ok {
		return nil, fmt.Errorf("retention: session %s is busy (a rewind holds it); try again", id)
	}
	return func() { lock.Unlock() }, nil
}

// removeDir deletes a session's directory for a retention plan, holding its
// rewind lock.
func removeDir(store, id string) error {
	dir := checkpoints.SessionDir(store, id)
	unlock, err := lockSession(dir, id)
	if err != nil {
		return fmt.Errorf("session %s is busy; left for the next run", id)
	}
	defer unlock()
	return trashDir(store, dir, id)
}

// trashDir unregisters a session, then renames its directory out of the
// way and deletes it: a crash leaves no half-deleted index that looks
// live, and at worst a directory whose index makes it a session still.
func trashDir(store, dir, id string) error {
	if err := checkpoints.Unregister(store, id); err != nil {
		return fmt.Errorf("remove session %s: %w", id, err)
	}
	trash := filepath.Join(store, "sessions", ".removed-"+id)
	os.RemoveAll(trash)
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("remove session %s: %w", id, err)
	}
	return os.RemoveAll(trash)
}

// cleanRemoved deletes what a crash in the middle of removing a session
// left: directories renamed to sessions/.removed-ID, no longer sessions.
func cleanRemoved(store string) {
	ents, _ := os.ReadDir(filepath.Join(store, "sessions"))
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), ".removed-") {
			os.RemoveAll(filepath.Join(store, "sessions", e.Name()))
		}
	}
}

// GCReport says what a collection did.
type GCReport struct {
	Scanned    int   `json:"scanned"`     // blobs in the store
	Live       int   `json:"live"`        // referenced by some session
	Deleted    int   `json:"deleted"`     // swept
	FreedBytes int64 `json:"freed_bytes"` // stored bytes swept
	Spared     int   `json:"spared"`      // unreferenced but younger than the grace period
	// Repacked counts the blobs re-encoded by the store's repack (cas.Disk.Repack)
	// and RepackSaved the stored bytes that saved.
	Repacked    int   `json:"repacked"`
	RepackSaved int64 `json:"repack_saved_bytes"`
}

// ErrEmptyLiveSet is wrapped by Collect when the store holds blobs but no
// session: that is what a wrong store path or a lost sessions directory
// looks like, so nothing is deleted unless the caller says an empty store
// is meant (CollectOptions.AllowEmpty).
var ErrEmptyLiveSet = errors.New("no session references any blob; refusing to delete them all")

// CollectOptions tune Collect.
type CollectOptions struct {
	Grace      time.Duration  // spare blobs younger than this
	AllowEmpty bool           // delete everything when nothing is referenced
	Progress   func(done int) // called as blobs are scanned, if set
}

// Collect deletes every blob no session of the store references (and that
// is older than the grace period). It marks and sweeps holding the store's
// collector lock, so captures running meanwhile cannot lose a blob (see
// doc.go). If any session's index cannot be read, or (unless AllowEmpty)
// the store has no session while it holds blobs, it deletes nothing.
func Collect(ctx context.Context, store string, blobs *cas.Disk, o CollectOptions) (GCReport, error) {
	var rep GCReport
	grace, progress := o.Grace, o.Progress
	// First the store is packed as git gc packs it: each delta chain's
	// newest version whole, older ones as deltas against newer ones. An
	// old version that only kept a newer one readable is then a base of
	// nothing, and the sweep below can delete it once no session names
	// it. Repack takes the collector lock itself, around each commit.
	// Under a time budget (automatic retention) it gets half of what is
	// left, and stopping there is not a failure: what it re-encoded is
	// committed, and the next collection goes on from there.
	rctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	rs, err := blobs.Repack(rctx)
	rep.Repacked, rep.RepackSaved = rs.Blobs, rs.Saved
	if err != nil && (ctx.Err() != nil || rctx.Err() == nil) {
		return rep, fmt.Errorf("retention: collect: nothing deleted: repacking failed: %w", err)
	}
	release, err := blobs.Collect(ctx)
	if err != nil {
		return rep, err
	}
	defer release()
	// The mark: every blob a session's index references, from the
	// catalog where it vouches for the index (it does only for an index
	// whose files have not changed since it was read), else from the index.
	ss, err := summaries(ctx, store)
	if err != nil {
		return rep, fmt.Errorf("retention: collect: nothing deleted: %w", err)
	}
	live := map[cas.ID]bool{}
	sessions := len(ss)
	for _, s := range ss {
		for _, b := range s.Refs {
			live[b] = true
		}
	}
	// Sessions read whose records name no blob (every turn holding one
	// pruned, the files gone from the stat cache) are a real empty live
	// set; no session at all is what a wrong path looks like.
	if len(live) == 0 && sessions == 0 && !o.AllowEmpty {
		if n, _, err := blobs.Usage(ctx); err != nil || n > 0 {
			return rep, fmt.Errorf("retention: collect: nothing deleted: %w", ErrEmptyLiveSet)
		}
	}
	cutoff := time.Now().Add(-grace)
	var doomed []cas.ID
	err = blobs.Walk(ctx, func(i cas.Info) error {
		rep.Scanned++
		if progress != nil && rep.Scanned%4096 == 0 {
			progress(rep.Scanned)
		}
		switch {
		case live[i.ID]:
			rep.Live++
		case grace > 0 && i.Created.After(cutoff):
			rep.Spared++
		default:
			doomed = append(doomed, i.ID)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("retention: collect: nothing deleted: %w", err)
	}
	rep.Deleted, rep.FreedBytes, err = blobs.DeleteMany(ctx, doomed)
	if err != nil {
		return rep, fmt.Errorf("retention: collect: %w", err)
	}
	n, freed, err := blobs.SweepObjects(ctx)
	rep.Deleted += n
	rep.FreedBytes += freed
	if err != nil {
		return rep, fmt.Errorf("retention: collect: %w", err)
	}
	release()
	cleanRemoved(store)
	// Give the space of what was swept back to the file system.
	if err := blobs.Compact(ctx); err != nil {
		return rep, fmt.Errorf("retention: collect: deleted %d blobs, but giving their space back failed: %w", rep.Deleted, err)
	}
	return rep, nil
}
