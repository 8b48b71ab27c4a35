package checkpoints

import (
	"context"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

func TestManifestsAreSharedAndDroppedWithTheirLastTurn(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	id := func(s string) ManifestEntry {
		return ManifestEntry{Path: s, Blob: sum(s), Mode: 0o644, Size: int64(len(s))}
	}
	same := &Manifest{Files: []ManifestEntry{id("a"), id("b")}, Skips: []ScanSkip{{Path: "big", Reason: "too big"}}}
	t0, _ := x.BeginTurn(ctx, "t0", nil, same)
	t1, _ := x.BeginTurn(ctx, "t1", nil, &Manifest{Files: []ManifestEntry{id("a"), id("b")}, Skips: []ScanSkip{{Path: "big", Reason: "too big"}}})
	t2, _ := x.BeginTurn(ctx, "t2", nil, &Manifest{Files: []ManifestEntry{id("a")}})
	count := func() (m, f int) {
		x.db.QueryRow(`SELECT count(*) FROM manifests`).Scan(&m)
		x.db.QueryRow(`SELECT count(*) FROM manifest_files`).Scan(&f)
		return
	}
	if m, f := count(); m != 2 || f != 3 {
		t.Fatalf("%d manifests, %d rows; want 2 and 3 (t0 and t1 share one)", m, f)
	}
	got, err := x.Manifest(ctx, t1.ID)
	if err != nil || len(got.Files) != 2 || len(got.Skips) != 1 || got.Files[1].Path != "b" {
		t.Fatalf("Manifest(t1) = %+v, %v", got, err)
	}
	if err := x.Prune(ctx, []int64{t0.ID}); err != nil {
		t.Fatal(err)
	}
	if m, _ := count(); m != 2 {
		t.Fatalf("pruning t0 dropped the manifest t1 still uses")
	}
	if err := x.Prune(ctx, []int64{t1.ID}); err != nil {
		t.Fatal(err)
	}
	if m, f := count(); m != 1 || f != 1 {
		t.Fatalf("after pruning t0 and t1: %d manifests, %d rows; want 1 and 1", m, f)
	}
	if got, _ := x.Manifest(ctx, t2.ID); got == nil || len(got.Files) != 1 {
		t.Fatalf("t2's manifest lost: %+v", got)
	}
}

func TestStatCacheRoundTrip(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := []StatEntry{
		{Path: "a/ü b.go", Size: 12, MTime: 1700000000123456789, CTime: -5, Inode: 1 << 40, Mode: 0o755, Blob: sum("a"), Checked: 42},
		{Path: "z", Blob: sum("z")},
	}
	if err := x.UpdateStatCache(ctx, nil, in); err != nil {
		t.Fatal(err)
	}
	out, err := x.StatCache(ctx)
	if err != nil || len(out) != 2 || out["a/ü b.go"] != in[0] || out["z"] != in[1] {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
	var refs int
	x.Refs(ctx, func(r Ref) error {
		if r.Kind == RefCache {
			refs++
		}
		return nil
	})
	if refs != 2 {
		t.Errorf("stat cache blobs as gc roots: %d refs, want 2", refs)
	}
}

func sum(s string) cas.ID { return cas.Sum([]byte(s)) }
