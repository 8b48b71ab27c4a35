package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/remote/backend"
)

// Remote garbage collection takes no lock: writers never wait for it and a
// dead collector leaves nothing to clean up. Its state is one object,
// gc/state.json, listing the packs and indexes that no HEAD named, each
// with the time a collection first found it so. An object is deleted only
// when
//
//   - no HEAD names it now,
//   - a collection at least the margin ago (default 24 h) already found no
//     HEAD naming it, and
//   - the server's modification time of the object is older than the margin.
//
// A sync reads the state first and never reuses a pack listed there: it
// uploads those blobs again in a new pack. So a pack a HEAD could come to
// name again is either not listed (and a later collection sees the HEAD
// naming it before the margin is out), or freshly written (and too young to
// delete). This holds while a sync takes less than the margin, and while
// the clocks of the machines running gc are within the margin of each other.
const gcStateKey = "gc/state.json"

// DefaultMargin is the default GC margin.
const DefaultMargin = 24 * time.Hour

type gcState struct {
	Format     int               `json:"format"`
	Updated    string            `json:"updated"`
	Candidates map[string]string `json:"candidates"` // key -> RFC 3339 time first found unreferenced
}

// readGCState returns the state and its ETag; an absent state is empty.
func (r *Remote) readGCState(ctx context.Context) (gcState, string, error) {
	st := gcState{Candidates: map[string]string{}}
	info, err := r.b.Stat(ctx, gcStateKey)
	if errors.Is(err, cas.ErrNotFound) {
		return st, "", nil
	}
	if err != nil {
		return st, "", err
	}
	rc, err := r.b.Get(ctx, gcStateKey, 0, info.Size)
	if err != nil {
		return st, "", err
	}
	defer rc.Close()
	body, err := cas.ReadFull(rc, info.Size)
	if err != nil {
		return st, "", err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, "", fmt.Errorf("remote: %s: %w: %v", gcStateKey, cas.ErrCorrupt, err)
	}
	if st.Candidates == nil {
		st.Candidates = map[string]string{}
	}
	return st, info.ETag, nil
}

// GCOptions tune a collection.
type GCOptions struct {
	Margin time.Duration // DefaultMargin when 0
	DryRun bool          // report, delete nothing, write no state
	// RepackBelow: a pack some HEAD names whose referenced frames are less
	// than this fraction of its frame bytes is repacked (repack.go).
	// 0 means DefaultRepackBelow; a negative value never repacks.
	RepackBelow float64
	Now         func() time.Time // time.Now when nil (tests)
}

// GCReport says what a collection found and did.
type GCReport struct {
	Live         int      `json:"live"`       // packs and indexes some HEAD names
	Candidates   int      `json:"candidates"` // unreferenced, kept for now
	Deleted      []string `json:"deleted"`
	DeletedBytes int64    `json:"deleted_bytes"`
	DryRun       bool     `json:"dry_run"`
	// AbortedUploads counts multipart uploads older than the margin that
	// were aborted (S3 only: parts of uploads whose writer died).
	AbortedUploads int `json:"aborted_uploads"`
	// Repack says which mostly-dead packs were (or, in a dry run, would be)
	// repacked.
	Repack RepackReport `json:"repack"`
}

// GC collects the remote's packs and indexes that no HEAD names (see the
// rule above). A HEAD it cannot read stops it before it deletes anything.
func (r *Remote) GC(ctx context.Context, o GCOptions) (GCReport, error) {
	rep := GCReport{Deleted: []string{}, DryRun: o.DryRun,
		Repack: RepackReport{Packs: []string{}, NewPacks: []string{}, Skipped: []string{}}}
	if o.Margin <= 0 {
		o.Margin = DefaultMargin
	}
	if o.RepackBelow == 0 {
		o.RepackBelow = DefaultRepackBelow
	}
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	st, etag, err := r.readGCState(ctx)
	if err != nil {
		return rep, err
	}
	if o.RepackBelow > 0 {
		// Before the HEADs are read below: the packs repacked are then
		// unreferenced, listed in the state, and no longer reused.
		if rep.Repack, err = r.repack(ctx, o.RepackBelow, o.DryRun); err != nil {
			return rep, err
		}
	}
	live, err := r.liveKeys(ctx)
	if err != nil {
		return rep, err
	}
	objs, err := r.collectable(ctx)
	if err != nil {
		return rep, err
	}
	next, doomed := sortOut(objs, live, st, now, o.Margin, &rep)
	if o.DryRun {
		for _, d := range doomed {
			rep.Deleted = append(rep.Deleted, d.Key)
			rep.DeletedBytes += d.Size
		}
		return rep, nil
	}
	// The state first: a collection that dies after it has only delayed
	// the deletions to the next run.
	if err := r.writeGCState(ctx, next, etag); err != nil {
		return rep, err
	}
	err = r.deleteDoomed(ctx, doomed, now.Add(-o.Margin), &rep)
	return rep, err
}

// liveKeys returns the keys of the packs and indexes some HEAD names.
func (r *Remote) liveKeys(ctx context.Context) (map[string]bool, error) {
	heads, err := r.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("remote gc: every HEAD must be readable to collect: %w", err)
	}
	live := map[string]bool{}
	for _, h := range heads {
		live[h.Index] = true
		for _, p := range h.Packs {
			live[p.Key] = true
		}
	}
	return live, nil
}

// collectable lists the objects a collection may delete: packs and
// indexes, never a HEAD.
func (r *Remote) collectable(ctx context.Context) ([]backend.ObjectInfo, error) {
	var objs []backend.ObjectInfo
	for _, prefix := range []string{"packs/", "sessions/"} {
		err := r.b.List(ctx, prefix, func(obj backend.ObjectInfo) error {
			if !strings.HasSuffix(obj.Key, "/HEAD") {
				objs = append(objs, obj)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// sortOut applies the rule above to objs: the live ones are counted, the
// unreferenced ones that a collection at least margin ago found so and
// that are older than margin are doomed, and the other unreferenced ones
// are the next state's candidates.
func sortOut(objs []backend.ObjectInfo, live map[string]bool, st gcState, now time.Time, margin time.Duration, rep *GCReport) (gcState, []backend.ObjectInfo) {
	next := gcState{Format: 1, Updated: now.UTC().Format(time.RFC3339), Candidates: map[string]string{}}
	var doomed []backend.ObjectInfo
	for _, obj := range objs {
		if live[obj.Key] {
			rep.Live++
			continue
		}
		first, seen := now, false
		if s, ok := st.Candidates[obj.Key]; ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				first, seen = t, true
			}
		}
		if seen && now.Sub(first) >= margin && now.Sub(obj.Modified) >= margin {
			doomed = append(doomed, obj)
			continue
		}
		rep.Candidates++
		next.Candidates[obj.Key] = first.UTC().Format(time.RFC3339)
	}
	return next, doomed
}

// writeGCState replaces the state read with ETag etag ("" for none) by
// st; it fails if another collection wrote it meanwhile.
func (r *Remote) writeGCState(ctx context.Context, st gcState, etag string) error {
	body, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	cond := backend.PutCond{IfAbsent: true}
	if etag != "" {
		cond = backend.PutCond{IfMatch: etag}
	}
	if _, err := r.b.Put(ctx, gcStateKey, bytes.NewReader(body), int64(len(body)), cond); err != nil {
		if errors.Is(err, backend.ErrPrecondition) {
			return fmt.Errorf("remote gc: another collection ran at the same time; nothing deleted, run again")
		}
		return err
	}
	return nil
}

// deleteDoomed deletes the doomed objects in key order, aborts multipart
// uploads started before staleBefore, and forgets the deleted packs in
// the store's records.
func (r *Remote) deleteDoomed(ctx context.Context, doomed []backend.ObjectInfo, staleBefore time.Time, rep *GCReport) error {
	sort.Slice(doomed, func(i, j int) bool { return doomed[i].Key < doomed[j].Key })
	for _, d := range doomed {
		if err := r.b.Delete(ctx, d.Key); err != nil {
			return err
		}
		rep.Deleted = append(rep.Deleted, d.Key)
		rep.DeletedBytes += d.Size
	}
	if ab, ok := r.b.(interface {
		AbortStaleUploads(context.Context, time.Time) (int, error)
	}); ok {
		n, err := ab.AbortStaleUploads(ctx, staleBefore)
		rep.AbortedUploads = n
		if err != nil {
			return err
		}
	}
	if len(doomed) == 0 {
		return nil
	}
	if _, err := r.db.ExecContext(ctx, `DELETE FROM blob_packs WHERE remote = ? AND pack IN (SELECT value FROM json_each(?))`,
		r.url, mustJSON(rep.Deleted)); err != nil {
		return err
	}
	_, err := r.db.ExecContext(ctx, `DELETE FROM packs WHERE remote = ? AND key IN (SELECT value FROM json_each(?))`,
		r.url, mustJSON(rep.Deleted))
	return err
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
