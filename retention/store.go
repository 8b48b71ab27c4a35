package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/gofrs/flock"
)

// eachSession opens every session index in store in turn and calls fn. It
// stops at the first error: a session that cannot be read is never taken
// for empty.
func eachSession(ctx context.Context, store string, fn func(id string, x *checkpoints.Index) error) error {
	ids, err := checkpoints.Sessions(store)
	if err != nil {
		return err
	}
	for _, id := range ids {
		x, err := checkpoints.Open(ctx, checkpoints.SessionDir(store, id))
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

// Load reads what Evaluate needs from every session of the store.
func Load(ctx context.Context, store string) ([]Session, error) {
	var out []Session
	err := eachSession(ctx, store, func(id string, x *checkpoints.Index) error {
		s := Session{ID: id}
		var err error
		if s.Turns, err = x.TurnRecords(ctx); err != nil {
			return err
		}
		if s.LastUse, err = x.LastUse(ctx); err != nil {
			return err
		}
		err = x.Refs(ctx, func(r checkpoints.Ref) error {
			if r.Kind == checkpoints.RefUndo {
				s.Undo = append(s.Undo, r.Blob)
			}
			return nil
		})
		out = append(out, s)
		return err
	})
	return out, err
}

// BlobSizes returns the stored size of every blob.
func BlobSizes(ctx context.Context, blobs cas.Store) (map[cas.ID]int64, error) {
	out := map[cas.ID]int64{}
	err := blobs.Walk(ctx, func(i cas.Info) error {
		out[i.ID] = i.Stored
		return nil
	})
	return out, err
}

// PlanFor loads the store and evaluates the policy at now.
func PlanFor(ctx context.Context, store string, blobs cas.Store, p Policy, now time.Time) (Plan, error) {
	sessions, err := Load(ctx, store)
	if err != nil {
		return Plan{}, err
	}
	sizes, err := BlobSizes(ctx, blobs)
	if err != nil {
		return Plan{}, err
	}
	return Evaluate(p, now, sessions, sizes), nil
}

// Apply carries out a plan: it prunes the turns and removes the sessions it
// names. A session whose rewind lock another process holds is left for the
// next run and reported in the error.
func Apply(ctx context.Context, store string, plan Plan) error {
	var errs []error
	for _, id := range plan.Removes() {
		if err := removeSession(store, id); err != nil {
			errs = append(errs, err)
		}
	}
	removed := map[string]bool{}
	for _, id := range plan.Removes() {
		removed[id] = true
	}
	for id, turns := range plan.Prunes() {
		if removed[id] {
			continue
		}
		x, err := checkpoints.Open(ctx, checkpoints.SessionDir(store, id))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := x.Prune(ctx, turns); err != nil {
			errs = append(errs, err)
		}
		x.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("retention: apply: %w", err)
	}
	return nil
}

// removeSession deletes a session's directory, holding its rewind lock so
// no rewind of it is running.
func removeSession(store, id string) error {
	dir := checkpoints.SessionDir(store, id)
	lock := flock.New(filepath.Join(dir, "ops.lock"))
	ok, err := lock.TryLock()
	if err != nil || !ok {
		return fmt.Errorf("session %s is busy; left for the next run", id)
	}
	defer lock.Unlock()
	// Rename first so a crash leaves no half-deleted index that looks live.
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
}

// ErrEmptyLiveSet is wrapped by Collect when no session references any
// blob while the store holds some: that is what a wrong store path or a
// lost sessions directory looks like, so nothing is deleted unless the
// caller says an empty store is meant (CollectOptions.AllowEmpty).
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
// nothing at all is referenced, it deletes nothing.
func Collect(ctx context.Context, store string, blobs *cas.Disk, o CollectOptions) (GCReport, error) {
	var rep GCReport
	grace, progress := o.Grace, o.Progress
	release, err := blobs.Collect(ctx)
	if err != nil {
		return rep, err
	}
	defer release()
	live := map[cas.ID]bool{}
	err = eachSession(ctx, store, func(_ string, x *checkpoints.Index) error {
		return x.Refs(ctx, func(r checkpoints.Ref) error {
			live[r.Blob] = true
			return nil
		})
	})
	if err != nil {
		return rep, fmt.Errorf("retention: collect: nothing deleted: %w", err)
	}
	if len(live) == 0 && !o.AllowEmpty {
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
	cleanRemoved(store)
	return rep, nil
}
