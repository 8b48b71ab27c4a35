package checkpoints

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// countManifests counts the stored manifests and their rows.
func countManifests(t *testing.T, x *Index) (manifests, rows int) {
	t.Helper()
	if err := x.db.QueryRow(`SELECT count(*) FROM manifests`).Scan(&manifests); err != nil {
		t.Fatal(err)
	}
	if err := x.db.QueryRow(`SELECT count(*) FROM manifest_files`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	return
}

// TestManifestDeltas opens many scanned turns, each changing a few files
// of a 200-file workspace (edits, additions, deletions, mode changes), and
// checks every turn's manifest reads back exactly, that the store holds a
// few rows per turn rather than a whole manifest, that chains stay within
// maxManifestDepth, and that pruning turns whose manifests are the base of
// kept ones loses nothing (reads, gc roots, earliest events).
func TestManifestDeltas(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	cur := map[string]ManifestEntry{}
	for i := range 200 {
		p := fmt.Sprintf("d%d/f%03d", i%7, i)
		cur[p] = ManifestEntry{Path: p, Blob: sum(p), Mode: 0o644, Size: int64(len(p))}
	}
	snapshot := func() *Manifest {
		m := &Manifest{}
		for _, e := range cur {
			m.Files = append(m.Files, e)
		}
		slices.SortFunc(m.Files, func(a, b ManifestEntry) int { return strings.Compare(a.Path, b.Path) })
		if rng.IntN(4) == 0 {
			m.Skips = []ScanSkip{{Path: "big", Reason: fmt.Sprint("too big ", rng.IntN(3))}}
		}
		return m
	}
	const turns = 3*maxManifestDepth + 5
	var ids []int64
	var want []*Manifest
	for n := range turns {
		for range 1 + rng.IntN(4) {
			switch p := fmt.Sprintf("d%d/f%03d", rng.IntN(7), rng.IntN(260)); rng.IntN(4) {
			case 0:
				delete(cur, p)
			case 1:
				cur[p] = ManifestEntry{Path: p, Blob: sum(fmt.Sprint(p, n)), Mode: 0o755, Size: int64(n)}
			default:
				cur[p] = ManifestEntry{Path: p, Blob: sum(fmt.Sprint(p, n)), Mode: 0o644, Size: int64(n)}
			}
		}
		m := snapshot()
		cp, err := x.BeginTurn(ctx, fmt.Sprint("t", n), nil, m)
		if err != nil {
			t.Fatal(err)
		}
		ids, want = append(ids, cp.ID), append(want, m)
	}
	check := func(from int) {
		t.Helper()
		for i := from; i < turns; i++ {
			got, err := x.Manifest(ctx, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Files, want[i].Files) || !slices.Equal(got.Skips, want[i].Skips) {
				t.Fatalf("turn %d: manifest read back differs: %d files, want %d", i, len(got.Files), len(want[i].Files))
			}
		}
	}
	check(0)
	m, rows := countManifests(t, x)
	if rows > 4*200+turns*8 {
		t.Errorf("%d turns stored %d rows in %d manifests; deltas should keep it near 4 whole manifests", turns, rows, m)
	}
	var maxDepth int
	if err := x.db.QueryRow(`SELECT max(depth) FROM manifests`).Scan(&maxDepth); err != nil || maxDepth > maxManifestDepth || maxDepth < 2 {
		t.Errorf("deepest chain %d (%v), want 2..%d", maxDepth, err, maxManifestDepth)
	}

	// Prune the first half: the kept turns' manifests are deltas on the
	// pruned ones' manifests, and must read and count as before.
	half := turns / 2
	if err := x.Prune(ctx, ids[:half]); err != nil {
		t.Fatal(err)
	}
	check(half)
	roots := map[cas.ID]bool{}
	if err := x.Refs(ctx, func(r Ref) error {
		if r.Kind == RefManifest {
			roots[r.Blob] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	recs, err := x.TurnRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := half; i < turns; i++ {
		var blobs map[cas.ID]bool
		for _, r := range recs {
			if r.ID == ids[i] {
				blobs = map[cas.ID]bool{}
				for _, b := range r.Blobs {
					blobs[b] = true
				}
			}
		}
		for _, e := range want[i].Files {
			if !roots[e.Blob] {
				t.Fatalf("turn %d: %s's blob is not a gc root after the prune", i, e.Path)
			}
			if !blobs[e.Blob] {
				t.Fatalf("turn %d: %s's blob is missing from its turn record", i, e.Path)
			}
		}
	}
	// Earliest events since the first kept turn: each path's entry in
	// the first kept manifest that has it.
	cps, err := x.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	for _, cp := range cps {
		if cp.ID == ids[half] {
			seq = cp.Seq
		}
	}
	ev, err := x.EarliestEvents(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	wantEv := map[string]ManifestEntry{}
	for i := half; i < turns; i++ {
		for _, e := range want[i].Files {
			if _, ok := wantEv[e.Path]; !ok {
				wantEv[e.Path] = e
			}
		}
	}
	if len(ev) != len(wantEv) {
		t.Errorf("%d earliest events, want %d", len(ev), len(wantEv))
	}
	for p, e := range wantEv {
		got, ok := ev[p]
		if !ok || got.State.Content == nil || *got.State.Content != e.Blob || got.State.Mode != e.Mode || got.State.Size != e.Size {
			t.Errorf("earliest %s = %+v, want %+v", p, got, e)
		}
	}
	// Pruning everything drops every manifest.
	if err := x.Prune(ctx, ids[half:]); err != nil {
		t.Fatal(err)
	}
	if m, rows := countManifests(t, x); m != 0 || rows != 0 {
		t.Errorf("after pruning every turn: %d manifests, %d rows", m, rows)
	}
}

// TestManifestDeltaRewritesLostEntries: an entry the base holds as lost is
// written afresh by the next manifest, which vouches for it again.
func TestManifestDeltaRewritesLostEntries(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var files []ManifestEntry
	for i := range 10 {
		p := fmt.Sprint("f", i)
		files = append(files, ManifestEntry{Path: p, Blob: sum(p), Mode: 0o644, Size: 1})
	}
	if _, err := x.BeginTurn(ctx, "t0", nil, &Manifest{Files: slices.Clone(files)}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.MarkLost(ctx, []cas.ID{sum("f3")}); err != nil {
		t.Fatal(err)
	}
	files[5].Blob = sum("changed")
	cp, err := x.BeginTurn(ctx, "t1", nil, &Manifest{Files: slices.Clone(files)})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := x.EarliestEvents(ctx, cp.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if ev["f3"].State.Lost || ev["f5"].State.Content == nil || *ev["f5"].State.Content != sum("changed") {
		t.Errorf("f3 %+v, f5 %+v: want f3 not lost and f5 changed", ev["f3"].State, ev["f5"].State)
	}
	if _, rows := countManifests(t, x); rows != 12 {
		t.Errorf("%d rows, want 12 (10 whole, then f3 again and f5)", rows)
	}
}

// TestManifestSince: a manifest whose Since names the previous scanned
// turn's manifest is stored as that delta without reading the base; one
// whose Since names another manifest is stored from its files, whatever
// its Since says.
func TestManifestSince(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var files []ManifestEntry
	for i := range 20 {
		p := fmt.Sprintf("f%02d", i)
		files = append(files, ManifestEntry{Path: p, Blob: sum(p), Mode: 0o644, Size: 1})
	}
	m0 := &Manifest{Files: slices.Clone(files)}
	if _, err := x.BeginTurn(ctx, "t0", nil, m0); err != nil {
		t.Fatal(err)
	}
	// t1: f03 edited, f07 gone, g added, told against m0.
	files[3].Blob = sum("edited")
	added := ManifestEntry{Path: "g", Blob: sum("g"), Mode: 0o644, Size: 1}
	f1 := append(slices.Delete(slices.Clone(files), 7, 8), added)
	m1 := &Manifest{Files: f1, Since: &ManifestChanges{Prev: m0.hash(), Files: []ManifestEntry{files[3], added}, Gone: []string{"f07"}}}
	t1, err := x.BeginTurn(ctx, "t1", nil, m1)
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := countManifests(t, x); rows != 23 {
		t.Errorf("%d rows, want 23 (20 whole, then 3 changes)", rows)
	}
	// t2: a Since that names some other manifest (and lies) is not used.
	f2 := slices.Clone(f1)
	f2[0].Blob = sum("again")
	m2 := &Manifest{Files: f2, Since: &ManifestChanges{Prev: sum("another manifest"), Gone: []string{"f00", "f01"}}}
	t2, err := x.BeginTurn(ctx, "t2", nil, m2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   int64
		want []ManifestEntry
	}{{t1.ID, f1}, {t2.ID, f2}} {
		got, err := x.Manifest(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Files, c.want) {
			t.Errorf("turn %d: files %v, want %v", c.id, got.Files, c.want)
		}
	}
}

// TestScanCacheHeader: the cache records the hash of the manifest its
// scan took, and a damaged cache vouches for none.
func TestScanCacheHeader(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := []StatEntry{{Path: "a", Size: 1, Blob: sum("a")}, {Path: "b", Size: 2, Blob: sum("b")}}
	m := &Manifest{Files: []ManifestEntry{{Path: "a", Blob: sum("a"), Size: 1}, {Path: "b", Blob: sum("b"), Size: 2}}}
	if err := x.UpdateScanCache(ctx, nil, in, m); err != nil {
		t.Fatal(err)
	}
	got, of, err := x.ScanCache(ctx)
	if err != nil || len(got) != 2 || got["b"] != in[1] || of != m.hash() {
		t.Fatalf("ScanCache = %v, %s, %v; want both entries and the manifest's hash", got, of.Short(), err)
	}
	data := encodeStats(in, m.hash())
	if part, of := decodeStats(data[:len(data)-3]); of != (cas.ID{}) || len(part) != 1 {
		t.Errorf("truncated cache: %d entries, hash %s; want 1 and none", len(part), of.Short())
	}
	if all, of := decodeStats(encodeStats(in, cas.ID{})); of != (cas.ID{}) || len(all) != 2 {
		t.Errorf("cache without a manifest: %d entries, hash %s", len(all), of.Short())
	}
}
