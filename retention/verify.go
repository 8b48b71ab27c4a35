package retention

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// FindingKind classifies what verify found.
type FindingKind string

// The finding kinds. Missing and corrupt blobs are losses; an orphan is a
// blob nothing references (collection removes it), not a loss.
const (
	Missing FindingKind = "missing"
	Corrupt FindingKind = "corrupt"
	Orphan  FindingKind = "orphan"
)

// Use is one place that references a blob.
type Use struct {
	Session string              `json:"session"`
	Kind    checkpoints.RefKind `json:"kind"`
	Turn    int                 `json:"turn"`
	Path    string              `json:"path"`
}

// Finding is one problem with one blob.
type Finding struct {
	Kind  FindingKind `json:"kind"`
	Blob  cas.ID      `json:"blob"`
	Error string      `json:"error,omitempty"`
	Uses  []Use       `json:"uses,omitempty"` // who loses what (not for orphans)
}

// VerifyReport is what Verify found and did.
type VerifyReport struct {
	Blobs    int       `json:"blobs"`    // in the store
	Checked  int       `json:"checked"`  // referenced blobs read and hashed
	Findings []Finding `json:"findings"` // sorted: losses first
	Repaired int       `json:"repaired"` // references marked lost by repair
	// Catalog lists the sessions whose summary in the store's catalog was
	// trusted yet disagreed with their index; verify rewrote them. A
	// catalog is a cache checked against the index files, so this is a
	// fault (a file system that kept a file's times across a change, or a
	// bug) that could have misled collection: not OK.
	Catalog []string `json:"catalog"`
}

// OK reports whether nothing referenced is missing or corrupt.
func (r VerifyReport) OK() bool {
	if len(r.Catalog) > 0 {
		return false
	}
	for _, f := range r.Findings {
		if f.Kind != Orphan {
			return false
		}
	}
	return true
}

// Verify reads and hashes every blob any session references, and lists the
// blobs that are missing or corrupt (with what each loss costs) and the
// blobs nothing references. References a repair already marked lost are
// not reported again. With repair, each loss is first reported through
// before (so the caller can say what is lost), then every reference to it
// is marked lost in its session (a rewind skips such paths, saying why,
// instead of restoring anything else) and a corrupt blob is deleted so that
// capturing the same content again stores it afresh.
func Verify(ctx context.Context, store string, blobs cas.Store, repair bool, before func(Finding), progress func(done, total int)) (VerifyReport, error) {
	var rep VerifyReport
	uses := map[cas.ID][]Use{}
	err := eachSession(ctx, store, func(id string, x *checkpoints.Index) error {
		return x.Refs(ctx, func(r checkpoints.Ref) error {
			if _, seen := uses[r.Blob]; !seen {
				uses[r.Blob] = nil
			}
			if !r.Lost {
				uses[r.Blob] = append(uses[r.Blob], Use{Session: id, Kind: r.Kind, Turn: r.Turn, Path: r.Path})
			}
			return nil
		})
	})
	if err != nil {
		return rep, fmt.Errorf("retention: verify: %w", err)
	}
	ids := make([]cas.ID, 0, len(uses))
	for id, u := range uses {
		if len(u) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Checked++
		if progress != nil && rep.Checked%256 == 0 {
			progress(rep.Checked, len(ids))
		}
		kind, msg, err := check(ctx, blobs, id)
		if err != nil {
			return rep, fmt.Errorf("retention: verify %s: %w", id.Short(), err)
		}
		if kind != "" {
			rep.Findings = append(rep.Findings, Finding{Kind: kind, Blob: id, Error: msg, Uses: uses[id]})
		}
	}
	// A blob no session names is an orphan unless a referenced blob is
	// stored as a delta against it (directly or down a chain): reading
	// that blob needs it, and collection keeps it.
	var unnamed []cas.ID
	bases := map[cas.ID]cas.ID{}
	err = blobs.Walk(ctx, func(i cas.Info) error {
		rep.Blobs++
		if !i.Base.IsZero() {
			bases[i.ID] = i.Base
		}
		if _, ok := uses[i.ID]; !ok {
			unnamed = append(unnamed, i.ID)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("retention: verify: %w", err)
	}
	needed := map[cas.ID]bool{}
	for id := range uses {
		for b, ok := bases[id]; ok && !needed[b]; b, ok = bases[b] {
			needed[b] = true
		}
	}
	for _, id := range unnamed {
		if !needed[id] {
			rep.Findings = append(rep.Findings, Finding{Kind: Orphan, Blob: id})
		}
	}
	if rep.Catalog, err = checkCatalog(ctx, store); err != nil {
		return rep, fmt.Errorf("retention: verify: %w", err)
	}
	if repair {
		if err := doRepair(ctx, store, blobs, &rep, before); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// checkCatalog compares the store catalog's trusted summaries with the
// indexes, rewriting those that disagree.
func checkCatalog(ctx context.Context, store string) ([]string, error) {
	cat, err := checkpoints.OpenCatalog(ctx, store)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	return cat.Check(ctx, func(ctx context.Context, id string) (*checkpoints.Index, error) {
		return openSession(ctx, store, id)
	})
}

// check reads one blob whole, verifying it, and classifies the outcome.
// Errors other than missing or corrupt (I/O, a closed store) are returned.
func check(ctx context.Context, blobs cas.Store, id cas.ID) (FindingKind, string, error) {
	r, err := blobs.Open(ctx, id)
	if errors.Is(err, cas.ErrNotFound) {
		return Missing, err.Error(), nil
	}
	if err != nil {
		return "", "", err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	switch {
	case errors.Is(err, cas.ErrCorrupt):
		return Corrupt, err.Error(), nil
	case err != nil:
		return "", "", err
	}
	return "", "", nil
}

func doRepair(ctx context.Context, store string, blobs cas.Store, rep *VerifyReport, before func(Finding)) error {
	bySession := map[string][]cas.ID{}
	for _, f := range rep.Findings {
		if f.Kind == Orphan {
			continue
		}
		if before != nil {
			before(f)
		}
		for _, u := range f.Uses {
			bySession[u.Session] = append(bySession[u.Session], f.Blob)
		}
	}
	err := eachSession(ctx, store, func(id string, x *checkpoints.Index) error {
		if len(bySession[id]) == 0 {
			return nil
		}
		n, err := x.MarkLost(ctx, bySession[id])
		rep.Repaired += n
		return err
	})
	if err != nil {
		return fmt.Errorf("retention: repair: %w", err)
	}
	for _, f := range rep.Findings {
		if f.Kind == Corrupt {
			if err := blobs.Delete(ctx, f.Blob); err != nil && !errors.Is(err, cas.ErrNotFound) {
				return fmt.Errorf("retention: repair: drop corrupt %s: %w", f.Blob.Short(), err)
			}
		}
	}
	return nil
}
