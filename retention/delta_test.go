package retention_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// sourceVersions returns n versions of a source-like file, each the
// previous one with a line inserted: what the store keeps as deltas.
func sourceVersions(n int) []string {
	rng := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	for b.Len() < 12<<10 {
		fmt.Fprintf(&b, "\tx%d := f(%d, %d)\n", rng.IntN(1000), rng.IntN(1<<20), rng.IntN(1<<20))
	}
	vs := []string{b.String()}
	for i := 1; i < n; i++ {
		prev := vs[i-1]
		at := strings.LastIndexByte(prev[:len(prev)/3+i*977%(len(prev)/2)], '\n') + 1 // a line start
		vs = append(vs, prev[:at]+fmt.Sprintf("\t// version %d\n", i)+prev[at:])
	}
	return vs
}

// deltaFixture records v[0..n-1] of a.go across turns t0..t(n-1), so that
// turn i starts with v[i] (the last turn captures it and writes "final"),
// and the store holds v[1..] as a delta chain.
func deltaFixture(t *testing.T, vs []string) *fixture {
	t.Helper()
	f := newFixture(t, "", "default")
	f.write("a.go", vs[0])
	for i := range vs {
		f.turn(fmt.Sprintf("t%d", i))
		next := "final"
		if i+1 < len(vs) {
			next = vs[i+1]
		}
		f.edit("a.go", next)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(checkpoints.BlobDir(f.store), "blobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM blobs WHERE base IS NOT NULL`).Scan(&n); err != nil || n < len(vs)-2 {
		t.Fatalf("%d deltas in the store, %v; the test needs at least %d", n, err, len(vs)-2)
	}
	return f
}

// TestGCKeepsDeltaBases: pruning the turns that name a chain's bases
// never strands a kept turn's blob: the collection repacks the chain
// first (the kept, newest version whole), so the pruned versions can go;
// whatever stays reads back, and verify calls nothing an orphan or a loss.
func TestGCKeepsDeltaBases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := sourceVersions(4)
	f := deltaFixture(t, vs)
	f.turn("after") // kept too: one more turn to keep
	st := f.storeAPI()
	plan, rep, err := st.Retain(ctx, keepTurns(2, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(plan, f.c.Session()); got != "pppkk" {
		t.Fatalf("actions %s, want pppkk", got)
	}
	blobs := f.blobs()
	for i, v := range vs {
		if !has(t, blobs, v) {
			if i == len(vs)-1 {
				t.Fatalf("the kept turn's version was deleted (gc deleted %d)", rep.Deleted)
			}
			continue
		}
		if b, err := blobs.Get(ctx, cas.Sum([]byte(v))); err != nil || string(b) != v {
			t.Errorf("version %d, still stored, reads %v", i, err)
		}
	}
	if _, err := f.c.Rewind(ctx, controller.Target{Turn: len(vs) - 1}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	f.want("a.go", vs[len(vs)-1])
	vr, err := st.Verify(ctx, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range vr.Findings {
		t.Errorf("verify found %s %s: %s", fd.Kind, fd.Blob.Short(), fd.Error)
	}
}

// TestVerifyCorruptDeltaBase: damage to a base that no session names is
// reported as corruption of the blobs that need it, never as missing.
func TestVerifyCorruptDeltaBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := sourceVersions(3)
	f := deltaFixture(t, vs)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(checkpoints.BlobDir(f.store), "blobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := cas.Sum([]byte(vs[0]))
	if _, err := db.Exec(`UPDATE blobs SET data = zeroblob(length(data)) WHERE id = ?`, base[:]); err != nil {
		t.Fatal(err)
	}
	st := f.storeAPI()
	rep, err := st.Verify(ctx, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[cas.ID]retention.FindingKind{}
	for _, fd := range rep.Findings {
		got[fd.Blob] = fd.Kind
	}
	for i, v := range vs {
		if k := got[cas.Sum([]byte(v))]; k != retention.Corrupt {
			t.Errorf("version %d: finding %q, want corrupt (all: %v)", i, k, got)
		}
	}
}

// TestGCRepacksChains: a collection repacks the store's delta chains (the
// newest version whole, older ones deltas against newer ones); every turn
// still rewinds, verify finds nothing, and once pruning leaves the old
// versions unreferenced the next collection deletes them, which forward
// deltas (each old version a base of the next) did not allow.
func TestGCRepacksChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vs := sourceVersions(6)
	f := deltaFixture(t, vs)
	f.turn("after")
	st := f.storeAPI()
	_, rep, err := st.Retain(ctx, controller.RetainOptions{CollectOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Repacked < len(vs)-1 || rep.RepackSaved <= 0 {
		t.Fatalf("gc report %+v, want the chain of %d versions repacked", rep, len(vs))
	}
	vr, err := st.Verify(ctx, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range vr.Findings {
		t.Errorf("verify after repack found %s %s: %s", fd.Kind, fd.Blob.Short(), fd.Error)
	}
	blobs := f.blobs()
	for i, v := range vs {
		if b, err := blobs.Get(ctx, cas.Sum([]byte(v))); err != nil || string(b) != v {
			t.Fatalf("version %d after repack: %v", i, err)
		}
	}
	// Keep the last two turns: the versions of the turns before are
	// pruned, and the collection deletes them, since no kept blob is a
	// delta against them any more.
	if _, _, err := st.Retain(ctx, keepTurns(2, "")); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs[:len(vs)-1] {
		if has(t, blobs, v) {
			t.Errorf("version %d is still stored after its turns were pruned and collected", i)
		}
	}
	if _, err := f.c.Rewind(ctx, controller.Target{Turn: len(vs) - 1}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	f.want("a.go", vs[len(vs)-1])
}
