package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt/ckpt/cas"
)

// Finding is one problem Verify found on the remote.
type Finding struct {
	Session string `json:"session"`
	Key     string `json:"key"`  // the object at fault
	Kind    string `json:"kind"` // "missing", "corrupt" or "unlisted" (a blob no listed pack holds)
	Detail  string `json:"detail"`
}

// VerifyReport is what Verify checked and found.
type VerifyReport struct {
	Sessions int       `json:"sessions"`
	Packs    int       `json:"packs"`
	Blobs    int       `json:"blobs"` // blobs fetched and hashed
	Findings []Finding `json:"findings"`
}

// OK reports whether nothing was found.
func (v VerifyReport) OK() bool { return len(v.Findings) == 0 }

// Verify checks every session on the remote as a pull would use it: its
// HEAD decodes, its index is there and hashes to what HEAD says, every pack
// HEAD names is there with a sound trailer, every blob the index references
// is in one of those packs, and (each pack checked once) every such blob's
// frame decodes to bytes that hash to its id.
func (r *Remote) Verify(ctx context.Context, progress func(done int)) (VerifyReport, error) {
	rep := VerifyReport{Findings: []Finding{}}
	ids, err := r.sessionIDs(ctx)
	if err != nil {
		return rep, err
	}
	checked := map[cas.ID]bool{} // blobs already hashed
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Sessions++
		find := func(key, kind, detail string) {
			rep.Findings = append(rep.Findings, Finding{Session: id, Key: key, Kind: kind, Detail: detail})
		}
		kindOf := func(err error) string {
			if errors.Is(err, cas.ErrNotFound) {
				return "missing"
			}
			return "corrupt"
		}
		h, _, err := r.ReadHead(ctx, id)
		if err != nil {
			find(headKey(id), kindOf(err), err.Error())
			continue
		}
		tmp, err := os.MkdirTemp(r.store, ".verify-")
		if err != nil {
			return rep, err
		}
		need, err := func() (map[cas.ID]bool, error) {
			if err := r.fetchIndex(ctx, h, filepath.Join(tmp, "index.db")); err != nil {
				return nil, err
			}
			return neededBlobs(ctx, tmp)
		}()
		os.RemoveAll(tmp)
		if err != nil {
			find(h.Index, kindOf(err), err.Error())
			continue
		}
		for _, p := range h.Packs {
			rep.Packs++
			es, err := readTrailer(ctx, r.b, p.Key, p.Size, p.Entries)
			if err != nil {
				find(p.Key, kindOf(err), err.Error())
				continue
			}
			for _, e := range es {
				if !need[e.ID] {
					continue
				}
				delete(need, e.ID)
				if checked[e.ID] {
					continue
				}
				checked[e.ID] = true
				if err := r.checkFrame(ctx, p.Key, e); err != nil {
					find(p.Key, kindOf(err), err.Error())
					continue
				}
				rep.Blobs++
				if progress != nil && rep.Blobs%256 == 0 {
					progress(rep.Blobs)
				}
			}
		}
		for b := range need {
			find(headKey(id), "unlisted", fmt.Sprintf("blob %s is in none of the packs HEAD names", b.Short()))
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].Session < rep.Findings[j].Session })
	return rep, nil
}

func (r *Remote) checkFrame(ctx context.Context, key string, e Entry) error {
	rc, err := r.b.Get(ctx, key, e.Off, e.Stored.Stored)
	if err != nil {
		return err
	}
	defer rc.Close()
	if e.Stored.Stored <= 2*cas.MaxInline {
		b, err := cas.ReadFull(rc, e.Stored.Stored)
		if err != nil {
			return err
		}
		return r.blobs.CheckStored(ctx, e.Stored, bytes.NewReader(b))
	}
	return r.blobs.CheckStored(ctx, e.Stored, rc)
}
