package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/remote/backend"
)

// Repacking. Packs are immutable, so a pack most of whose blobs no session
// references any more (their turns were pruned) keeps its dead bytes for as
// long as one live blob in it is named. A collection repacks such a pack:
//
//  1. it reads every session's HEAD (with its ETag) and index, and so knows
//     which blobs each session references;
//  2. for each pack some HEAD names whose referenced frames are less than
//     RepackBelow of its frame bytes, it fetches the pack, checks every
//     referenced frame (decoded and hashed: corruption is never copied), and
//     writes those frames into new packs, durable before step 3;
//  3. it rewrites each HEAD naming a repacked pack to name the new packs
//     instead, with if-match on the ETag read in step 1. A HEAD that changed
//     meanwhile is left alone: it still names the old pack, which so stays
//     live. The rewritten HEAD keeps the index, and records in repacked_from
//     the ETag of the writer's HEAD it replaced, so that writer's next sync
//     (whose if-match on that ETag now fails) knows nobody else wrote the
//     session and carries on instead of forking.
//
// The old packs are then named by no HEAD and go the way of every
// unreferenced object: the same collection lists them, syncs stop reusing
// them, and a collection at least the margin later deletes them.

// DefaultRepackBelow is the live fraction under which a pack is repacked.
const DefaultRepackBelow = 0.5

// RepackReport says what repacking did.
type RepackReport struct {
	Packs     []string `json:"packs"`      // packs repacked (now unreferenced)
	NewPacks  []string `json:"new_packs"`  // packs written in their place
	DeadBytes int64    `json:"dead_bytes"` // unreferenced frame bytes they held
	LiveBytes int64    `json:"live_bytes"` // referenced frame bytes copied
	Sessions  int      `json:"sessions"`   // HEADs rewritten
	// Skipped names the sessions whose HEAD changed during the repack; their
	// HEADs still name the old packs.
	Skipped []string `json:"skipped"`
}

type headAt struct {
	h    Head
	etag string
	refs map[cas.ID]bool
}

// repack runs steps 1-3 above. With dryRun it only reports which packs it
// would repack (and the bytes), writing nothing.
func (r *Remote) repack(ctx context.Context, below float64, dryRun bool) (RepackReport, error) {
	rep := RepackReport{Packs: []string{}, NewPacks: []string{}, Skipped: []string{}}
	heads, err := r.readHeads(ctx)
	if err != nil {
		return rep, err
	}
	victims, err := r.repackVictims(ctx, heads, below, &rep)
	if err != nil || dryRun || len(victims) == 0 {
		return rep, err
	}
	moved, err := r.moveLive(ctx, victims, &rep)
	if err != nil {
		return rep, err
	}
	err = r.repointHeads(ctx, heads, victims, moved, &rep)
	return rep, err
}

// readHeads is step 1: every session's HEAD, with its ETag and the blobs
// its index references. Every HEAD must be readable.
func (r *Remote) readHeads(ctx context.Context) ([]*headAt, error) {
	ids, err := r.sessionIDs(ctx)
	if err != nil {
		return nil, err
	}
	var heads []*headAt
	for _, id := range ids {
		h, etag, err := r.ReadHead(ctx, id)
		if errors.Is(err, cas.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("remote repack: every HEAD must be readable: %w", err)
		}
		need, err := r.headRefs(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("remote repack: session %s: %w", id, err)
		}
		heads = append(heads, &headAt{h: h, etag: etag, refs: need})
	}
	return heads, nil
}

// repackVictim is a pack to repack and its entries some HEAD naming it
// references.
type repackVictim struct {
	ref  PackRef
	live []Entry
}

// repackVictims returns, in key order, the packs some HEAD names whose
// referenced frames are under below of their frame bytes, and adds them
// to rep.
func (r *Remote) repackVictims(ctx context.Context, heads []*headAt, below float64, rep *RepackReport) ([]repackVictim, error) {
	naming := map[string][]*headAt{} // pack key -> the HEADs naming it
	refs := map[string]PackRef{}
	for _, ha := range heads {
		for _, p := range ha.h.Packs {
			naming[p.Key] = append(naming[p.Key], ha)
			refs[p.Key] = p
		}
	}
	keys := make([]string, 0, len(naming))
	for k := range naming {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var victims []repackVictim
	for _, k := range keys {
		p := refs[k]
		if p.Entries < 2 {
			continue // a blob alone in its pack: nothing to gain
		}
		es, err := readTrailer(ctx, r.b, p.Key, p.Size, p.Entries)
		if err != nil {
			return nil, fmt.Errorf("remote repack: %w", err)
		}
		keep, total, live := liveEntries(es, naming[k])
		if total == 0 || float64(live) >= below*float64(total) {
			continue
		}
		victims = append(victims, repackVictim{ref: p, live: keep})
		rep.Packs = append(rep.Packs, p.Key)
		rep.DeadBytes += total - live
		rep.LiveBytes += live
	}
	return victims, nil
}

// liveEntries returns the entries of a pack that one of heads references,
// the pack's frame bytes and those of the entries returned.
func liveEntries(es []Entry, heads []*headAt) (keep []Entry, total, live int64) {
	for _, e := range es {
		total += e.Stored.Stored
		for _, ha := range heads {
			if ha.refs[e.ID] {
				live += e.Stored.Stored
				keep = append(keep, e)
				break
			}
		}
	}
	return keep, total, live
}

// packWriter fills new packs, uploading and recording each when it is
// full, and remembers which pack each blob went to.
type packWriter struct {
	r     *Remote
	rep   *RepackReport
	pb    packBuilder
	moved map[cas.ID]PackRef // blob -> the new pack holding it
}

// flush uploads and records the pack being filled, if it holds anything.
func (w *packWriter) flush(ctx context.Context) error {
	if len(w.pb.entries) == 0 {
		return nil
	}
	body, key := w.pb.finish()
	ref := PackRef{Key: key, Size: int64(len(body)), Entries: len(w.pb.entries)}
	if err := w.r.putPack(ctx, ref, bytes.NewReader(body)); err != nil {
		return err
	}
	if err := w.r.recordPack(ctx, ref, w.pb.entries); err != nil {
		return err
	}
	for _, e := range w.pb.entries {
		w.moved[e.ID] = ref
	}
	w.rep.NewPacks = append(w.rep.NewPacks, key)
	w.pb = packBuilder{}
	return nil
}

// moveLive is step 2: the victims' live frames, each checked, into new
// packs, all durable when it returns. It returns the new pack of each
// blob moved.
func (r *Remote) moveLive(ctx context.Context, victims []repackVictim, rep *RepackReport) (map[cas.ID]PackRef, error) {
	w := &packWriter{r: r, rep: rep, moved: map[cas.ID]PackRef{}}
	placed := map[cas.ID]bool{}
	for _, v := range victims {
		if len(v.live) == 0 {
			continue
		}
		body, err := r.getPack(ctx, v.ref)
		if err != nil {
			return nil, err
		}
		for _, e := range v.live {
			if placed[e.ID] {
				continue
			}
			frame := body[e.Off : e.Off+e.Stored.Stored]
			if err := r.blobs.CheckStored(ctx, e.Stored, bytes.NewReader(frame)); err != nil {
				return nil, fmt.Errorf("remote repack: blob %s in %s: %w (ckpt verify --remote)", e.ID.Short(), v.ref.Key, err)
			}
			if !w.pb.fits(e.Stored.Stored) {
				if err := w.flush(ctx); err != nil {
					return nil, err
				}
			}
			if err := w.pb.add(e.Stored, bytes.NewReader(frame)); err != nil {
				return nil, err
			}
			placed[e.ID] = true
		}
	}
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.moved, nil
}

// repointHeads is step 3: every HEAD naming a victim names the new packs
// instead, replaced with if-match on the ETag step 1 read; a HEAD that
// moved meanwhile is skipped.
func (r *Remote) repointHeads(ctx context.Context, heads []*headAt, victims []repackVictim, moved map[cas.ID]PackRef, rep *RepackReport) error {
	gone := map[string]bool{}
	for _, v := range victims {
		gone[v.ref.Key] = true
	}
	for _, ha := range heads {
		nh, ok := repointed(ha, gone, moved)
		if !ok {
			continue
		}
		body, err := json.MarshalIndent(nh, "", "  ")
		if err != nil {
			return err
		}
		_, err = r.b.Put(ctx, headKey(nh.Session), bytes.NewReader(body), int64(len(body)), backend.PutCond{IfMatch: ha.etag})
		if errors.Is(err, backend.ErrPrecondition) {
			rep.Skipped = append(rep.Skipped, nh.Session)
			continue
		}
		if err != nil {
			return fmt.Errorf("remote repack: HEAD of %s: %w", nh.Session, err)
		}
		rep.Sessions++
	}
	return nil
}

// repointed returns ha's HEAD naming, instead of the gone packs, the new
// packs its blobs moved to, and whether it named a gone pack at all.
func repointed(ha *headAt, gone map[string]bool, moved map[cas.ID]PackRef) (Head, bool) {
	var hit bool
	for _, p := range ha.h.Packs {
		hit = hit || gone[p.Key]
	}
	if !hit {
		return Head{}, false
	}
	nh := ha.h
	seen := map[string]bool{}
	nh.Packs = []PackRef{}
	for _, p := range ha.h.Packs {
		if gone[p.Key] || seen[p.Key] {
			continue
		}
		seen[p.Key] = true
		nh.Packs = append(nh.Packs, p)
	}
	for id := range ha.refs {
		if p, ok := moved[id]; ok && !seen[p.Key] {
			seen[p.Key] = true
			nh.Packs = append(nh.Packs, p)
		}
	}
	sort.Slice(nh.Packs, func(i, j int) bool { return nh.Packs[i].Key < nh.Packs[j].Key })
	if nh.RepackedFrom == "" {
		nh.RepackedFrom = ha.etag
	}
	return nh, true
}

// sessionIDs lists the ids of the sessions with a HEAD.
func (r *Remote) sessionIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := r.b.List(ctx, "sessions/", func(o backend.ObjectInfo) error {
		if id, ok := sessionOfHead(o.Key); ok {
			ids = append(ids, id)
		}
		return nil
	})
	sort.Strings(ids)
	return ids, err
}

// headRefs downloads h's index and returns the blobs it references.
func (r *Remote) headRefs(ctx context.Context, h Head) (map[cas.ID]bool, error) {
	tmp, err := os.MkdirTemp(r.store, ".repack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := r.fetchIndex(ctx, h, filepath.Join(tmp, "index.db")); err != nil {
		return nil, err
	}
	return neededBlobs(ctx, tmp)
}

// getPack reads a whole pack (at most about PackTarget bytes when it holds
// more than one blob).
func (r *Remote) getPack(ctx context.Context, p PackRef) ([]byte, error) {
	rc, err := r.b.Get(ctx, p.Key, 0, p.Size)
	if err != nil {
		return nil, fmt.Errorf("remote: %s: %w", p.Key, err)
	}
	defer rc.Close()
	body, err := cas.ReadFull(rc, p.Size)
	if err != nil {
		return nil, fmt.Errorf("remote: %s: %w", p.Key, err)
	}
	return body, nil
}
