package checkpoints

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

func TestManifestsAreSharedAndDroppedWithTheirLastTurn(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestScanCacheByDirectory: the cache records the hash of the manifest
// its scan took; a save that names the directories it changed rewrites
// only their rows, and falls back to a whole rewrite when another save
// came between; dropping the header row drops the cache; a damaged cache
// vouches for no manifest.
func TestScanCacheByDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	entry := func(p string, size int64) StatEntry { return StatEntry{Path: p, Size: size, Blob: sum(p)} }
	manifestOf := func(es []StatEntry) *Manifest {
		m := &Manifest{}
		for _, e := range es {
			m.Files = append(m.Files, ManifestEntry{Path: e.Path, Blob: e.Blob, Size: e.Size})
		}
		slices.SortFunc(m.Files, func(a, b ManifestEntry) int { return strings.Compare(a.Path, b.Path) })
		return m
	}
	load := func() *ScanCache {
		t.Helper()
		sc, err := x.LoadScanCache(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	same := func(sc *ScanCache, want []StatEntry) bool {
		if len(sc.Entries()) != len(want) {
			return false
		}
		for _, e := range want {
			if sc.Entries()[e.Path] != e {
				return false
			}
		}
		return true
	}
	dirRows := func() (n int) {
		x.db.QueryRow(`SELECT count(*) FROM statcache WHERE id < 0`).Scan(&n)
		return
	}
	v1 := []StatEntry{entry("a", 1), entry("d/b", 2), entry("d/c", 3), entry("e/f", 4)}
	if err := x.SaveScanCache(ctx, load(), StatsByDir(v1), nil, manifestOf(v1)); err != nil {
		t.Fatal(err)
	}
	sc1 := load()
	if !same(sc1, v1) || sc1.Manifest != manifestOf(v1).hash() || dirRows() != 3 {
		t.Fatalf("after a whole save: %d entries, %d rows, manifest %s", len(sc1.Entries()), dirRows(), sc1.Manifest.Short())
	}
	if dirBucket("") == dirBucket("d") || dirBucket("") == dirBucket("e") {
		t.Fatal("the test needs the root in a bucket of its own")
	}
	// d/b changed, e/f gone: rows d and e, nothing else.
	x.db.Exec(`UPDATE statcache SET data = x'' WHERE id = ?`, bucketRow(dirBucket(""))) // a row the save must not touch
	v2 := []StatEntry{entry("a", 1), entry("d/b", 20), entry("d/c", 3)}
	if err := x.SaveScanCache(ctx, sc1, StatsByDir(v2), map[string]bool{"d": true, "e": true}, manifestOf(v2)); err != nil {
		t.Fatal(err)
	}
	sc2 := load()
	if _, ok := sc2.Entries()["a"]; ok || len(sc2.Entries()) != 2 || sc2.Entries()["d/b"] != v2[1] || dirRows() != 2 {
		t.Fatalf("a save naming d and e touched other rows or missed these: %+v, %d rows", sc2.Entries(), dirRows())
	}
	// Another save from sc1 after sc2's: rewritten whole.
	if err := x.SaveScanCache(ctx, sc1, StatsByDir(v1), map[string]bool{}, nil); err != nil {
		t.Fatal(err)
	}
	if sc := load(); !same(sc, v1) || !sc.Manifest.IsZero() {
		t.Fatalf("a save from a stale cache: %d entries, manifest %s; want v1 whole and no manifest", len(sc.Entries()), sc.Manifest.Short())
	}
	// A repair or a pull deletes the header row: the cache is empty.
	if _, err := x.MarkLost(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if sc := load(); len(sc.Entries()) != 0 || dirRows() != 0 {
		t.Fatalf("after MarkLost: %d entries, %d rows", len(sc.Entries()), dirRows())
	}
	if err := x.SaveScanCache(ctx, load(), StatsByDir(v1), nil, manifestOf(v1)); err != nil {
		t.Fatal(err)
	}
	x.db.Exec(`DELETE FROM statcache`)
	if sc := load(); len(sc.Entries()) != 0 {
		t.Fatalf("directory rows without the header row: %d entries, want none", len(sc.Entries()))
	}
	// Damage.
	data := encodeStats(v1, sum("m"), 0)
	got := map[string]StatEntry{}
	if of, _, ok := decodeStats(data[:len(data)-3], got); ok || len(got) != 3 || !of.IsZero() {
		t.Errorf("truncated: ok %v, %d entries, manifest %s; want false, 3, none", ok, len(got), of.Short())
	}
	if of, gen, ok := decodeStats(encodeStats(nil, sum("m"), 7), got); !ok || gen != 7 || of != sum("m") {
		t.Errorf("header: %s %d %v", of.Short(), gen, ok)
	}
}

// TestScanCacheDirs: a loaded cache gives each directory's entries sorted
// by path, from rows written a directory at a time or, as an older ckpt
// wrote them, in any order; a save naming some directories keeps the
// others' entries as they were (here through a whole rewrite: the test's
// row holds directories of other buckets).
func TestScanCacheDirs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	entry := func(p string, size int64) StatEntry {
		return StatEntry{Path: p, Size: size, MTime: 5, Checked: 9, Blob: sum(p)}
	}
	paths := func(es []StatEntry) (out []string) {
		for _, e := range es {
			out = append(out, e.Path)
		}
		return
	}
	// An older ckpt's row: directories interleaved, unsorted.
	mixed := []StatEntry{entry("d/z", 1), entry("top", 2), entry("d/a", 3), entry("e/x", 4), entry("d/m", 5)}
	x.db.Exec(`INSERT INTO statcache (id, data) VALUES (1, ?)`, encodeStats(nil, cas.ID{}, 1))
	x.db.Exec(`INSERT INTO statcache (id, data) VALUES (-1, ?)`, encodeStats(mixed, cas.ID{}, 0))
	sc, err := x.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(sc.Dir("d", nil)); !slices.Equal(got, []string{"d/a", "d/m", "d/z"}) || sc.Len() != 5 {
		t.Fatalf("d: %q (len %d), want d/a d/m d/z of 5", got, sc.Len())
	}
	if got := paths(sc.Dir("", nil)); !slices.Equal(got, []string{"top"}) {
		t.Fatalf("root: %q", got)
	}
	dirs := sc.DirNames()
	slices.Sort(dirs)
	if !slices.Equal(dirs, []string{"", "d", "e"}) {
		t.Fatalf("dirs %q", dirs)
	}
	// d changed (d/m gone, d/b new); e and the root are kept from sc.
	if err := x.SaveScanCache(ctx, sc, StatsByDir([]StatEntry{entry("d/b", 6), entry("d/a", 3), entry("top", 99)}), map[string]bool{"d": true}, nil); err != nil {
		t.Fatal(err)
	}
	sc2, err := x.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]StatEntry{"d/a": entry("d/a", 3), "d/b": entry("d/b", 6), "top": entry("top", 2), "e/x": entry("e/x", 4)}
	if got := sc2.Entries(); !maps.Equal(got, want) {
		t.Fatalf("after saving d: %v, want %v", got, want)
	}
	if got := paths(sc2.Dir("d", nil)); !slices.Equal(got, []string{"d/a", "d/b"}) {
		t.Fatalf("d: %q", got)
	}
	// A cache built in memory reads the same.
	if got := NewScanCache(slices.Collect(maps.Values(want))).Entries(); !maps.Equal(got, want) {
		t.Fatalf("NewScanCache: %v", got)
	}
	var nilCache *ScanCache
	if nilCache.Len() != 0 || len(nilCache.Dir("d", nil)) != 0 || len(nilCache.Entries()) != 0 {
		t.Fatal("a nil cache is not empty")
	}
}

// TestSaveScanCacheByDir: SaveScanCache takes each directory's entries as
// given; one not sorted is saved sorted, the caller's slice left as it
// was; an entry under a directory that is not its own fails the save and
// writes nothing; an empty directory is no entry.
func TestSaveScanCacheByDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	entry := func(p string) StatEntry { return StatEntry{Path: p, Size: 1, MTime: 5, Checked: 9, Blob: sum(p)} }
	d := []StatEntry{entry("d/c"), entry("d/a"), entry("d/b")}
	byDir := map[string][]StatEntry{"d": d, "": {entry("top")}, "e": {}}
	if err := x.SaveScanCache(ctx, nil, byDir, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := []string{d[0].Path, d[1].Path, d[2].Path}; !slices.Equal(got, []string{"d/c", "d/a", "d/b"}) {
		t.Fatalf("the caller's slice is now %q", got)
	}
	sc, err := x.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]StatEntry{"d/a": entry("d/a"), "d/b": entry("d/b"), "d/c": entry("d/c"), "top": entry("top")}
	if got := sc.Entries(); !maps.Equal(got, want) {
		t.Fatalf("saved %v, want %v", got, want)
	}
	if got := sc.DirNames(); slices.Contains(got, "e") {
		t.Fatalf("directories %q hold the empty e", got)
	}
	err = x.SaveScanCache(ctx, nil, map[string][]StatEntry{"d": {entry("d/a"), entry("e/x")}}, nil, nil)
	if err == nil {
		t.Fatal("an entry under another directory was saved")
	}
	again, err := x.LoadScanCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Entries(); !maps.Equal(got, want) {
		t.Fatalf("after the refused save: %v, want %v", got, want)
	}
}

// TestUnchangedManifestShortcut: a manifest whose Since reports no change
// from a stored manifest with the same skips is taken to be that manifest
// (insertManifest does not hash it); the shortcut must not apply when the
// skips differ, and a Prev that is not stored falls back to the hash.
func TestUnchangedManifestShortcut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	files := []ManifestEntry{{Path: "a", Blob: sum("a"), Mode: 0o644, Size: 1}, {Path: "b/c", Blob: sum("c"), Mode: 0o755, Size: 2}}
	skips := []ScanSkip{{Path: "big", Reason: "too big"}, {Path: "crowd", Reason: "too many"}}
	m0 := &Manifest{Files: files, Skips: skips}
	t0, err := x.BeginTurn(ctx, "t0", nil, m0)
	if err != nil {
		t.Fatal(err)
	}
	manifestID := func(turnID int64) (id int64) {
		t.Helper()
		if err := x.db.QueryRow(`SELECT manifest_id FROM turns WHERE id = ?`, turnID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	unchanged := func(prev cas.ID, skips []ScanSkip) *Manifest {
		return &Manifest{Files: slices.Clone(files), Skips: skips, Since: &ManifestChanges{Prev: prev, Gone: []string{}}}
	}
	t1, err := x.BeginTurn(ctx, "t1", nil, unchanged(m0.hash(), slices.Clone(skips)))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := countManifests(t, x); n != 1 || manifestID(t1.ID) != manifestID(t0.ID) {
		t.Fatalf("an unchanged manifest: %d manifests, turn's %d, want 1 and %d", n, manifestID(t1.ID), manifestID(t0.ID))
	}
	// The skips differ (a big file grew): a manifest of its own.
	grown := []ScanSkip{{Path: "big", Reason: "bigger"}, {Path: "crowd", Reason: "too many"}}
	t2, err := x.BeginTurn(ctx, "t2", nil, unchanged(m0.hash(), grown))
	if err != nil {
		t.Fatal(err)
	}
	m, err := x.Manifest(ctx, t2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if manifestID(t2.ID) == manifestID(t0.ID) || !slices.Equal(m.Skips, grown) || !slices.Equal(m.Files, files) {
		t.Fatalf("other skips: manifest %d (t0's %d), skips %v, files %v", manifestID(t2.ID), manifestID(t0.ID), m.Skips, m.Files)
	}
	// One skip fewer, and a Prev not stored: hashed and found or stored.
	t3, err := x.BeginTurn(ctx, "t3", nil, unchanged(m0.hash(), skips[:1]))
	if err != nil {
		t.Fatal(err)
	}
	t4, err := x.BeginTurn(ctx, "t4", nil, unchanged(sum("not stored"), slices.Clone(skips)))
	if err != nil {
		t.Fatal(err)
	}
	if manifestID(t3.ID) == manifestID(t0.ID) || manifestID(t4.ID) != manifestID(t0.ID) {
		t.Fatalf("t3 manifest %d, t4 %d; want t3 its own and t4 t0's %d", manifestID(t3.ID), manifestID(t4.ID), manifestID(t0.ID))
	}
}

// TestTurnDiffMatchesWholeManifests: TurnDiff reads a delta's paths where
// the next turn's manifest is stored against the turn's; it must say what
// the whole manifests (TurnEnds) disagree on, for random sequences of
// manifests told as deltas against the previous one or not, identical
// ones, turns without a manifest, and conversation rewinds hiding turns.
func TestTurnDiffMatchesWholeManifests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	deltas := 0 // manifests stored as deltas: TurnDiff's own reading
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 0))
		x, err := Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cur := map[string]ManifestEntry{}
		var prev *Manifest
		var turns []Checkpoint
		for i := range 25 {
			for range r.IntN(4) {
				p := fmt.Sprintf("d%d/f%d", r.IntN(3), r.IntN(8))
				switch r.IntN(4) {
				case 0:
					delete(cur, p)
				case 1:
					e := cur[p]
					e.Path, e.Mode = p, e.Mode^0o100|0o644
					if e.Size == 0 {
						e.Blob, e.Size = sum(p), 1
					}
					cur[p] = e
				default:
					cur[p] = ManifestEntry{Path: p, Blob: sum(fmt.Sprint(r.IntN(5))), Mode: 0o644, Size: 1}
				}
			}
			var m *Manifest
			if r.IntN(5) != 0 {
				m = &Manifest{}
				for _, p := range slices.Sorted(maps.Keys(cur)) {
					m.Files = append(m.Files, cur[p])
				}
				if r.IntN(4) == 0 {
					m.Skips = []ScanSkip{{Path: "big", Reason: "over"}}
				}
				if prev != nil && r.IntN(3) != 0 {
					m.Since = &ManifestChanges{Prev: prev.hash()}
					old := map[string]ManifestEntry{}
					for _, e := range prev.Files {
						old[e.Path] = e
					}
					for _, e := range m.Files {
						if o, ok := old[e.Path]; !ok || o != e {
							m.Since.Files = append(m.Since.Files, e)
						}
						delete(old, e.Path)
					}
					m.Since.Gone = slices.Sorted(maps.Keys(old))
				}
				prev = m
			}
			cp, err := x.BeginTurn(ctx, fmt.Sprint("t", i), nil, m)
			if err != nil {
				t.Fatal(err)
			}
			turns = append(turns, cp)
			if i > 3 && r.IntN(8) == 0 {
				op, err := x.PlanOp(ctx, Op{Kind: OpRewind, Turn: cp.Turn - r.IntN(3), Scope: ScopeConversation})
				if err != nil {
					t.Fatal(err)
				}
				if err := x.FinishOp(ctx, op.ID, Done{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, cp := range turns {
			d, ended, err := x.TurnDiff(ctx, cp.ID)
			if err != nil {
				t.Fatal(err)
			}
			start, end, err := x.TurnEnds(ctx, cp.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ended != (start != nil && end != nil) {
				t.Fatalf("seed %d turn %d: ended %v, whole manifests %v %v", seed, cp.ID, ended, start != nil, end != nil)
			}
			if !ended {
				continue
			}
			if want := DiffManifests(start, end); !reflect.DeepEqual(d.Files, want) {
				t.Errorf("seed %d turn %d: diff\n got  %+v\n want %+v", seed, cp.ID, d.Files, want)
			}
			if start != end && (!slices.Equal(d.FromSkips, start.Skips) || !slices.Equal(d.ToSkips, end.Skips)) {
				t.Errorf("seed %d turn %d: skips %v %v, want %v %v", seed, cp.ID, d.FromSkips, d.ToSkips, start.Skips, end.Skips)
			}
		}
		var n int
		if err := x.db.QueryRow(`SELECT count(*) FROM manifests WHERE base IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		deltas += n
		x.Close()
	}
	if deltas < 50 {
		t.Errorf("only %d manifests stored as deltas: the test does not exercise TurnDiff's delta reading", deltas)
	}
}
