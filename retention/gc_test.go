package retention_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// fixture is one session of a real store in temp directories.
type fixture struct {
	t         testing.TB
	ws, store string
	c         *controller.Controller
}

func newFixture(t testing.TB, store, session string) *fixture {
	t.Helper()
	if store == "" {
		store = t.TempDir()
	}
	f := &fixture{t: t, ws: t.TempDir(), store: store}
	c, err := controller.Open(context.Background(), controller.Options{Workspace: f.ws, Store: store, Session: session, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	t.Cleanup(func() { c.Close() })
	return f
}

// blobs opens the store's blob store beside the fixture's controller.
func (f *fixture) blobs() *cas.Disk {
	f.t.Helper()
	d, err := cas.OpenDisk(context.Background(), checkpoints.BlobDir(f.store))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { d.Close() })
	return d
}

// storeAPI opens the fixture's store for store-wide work (retention, gc,
// verify), as `ckpt gc` would.
func (f *fixture) storeAPI() *controller.Store {
	f.t.Helper()
	s := controller.OpenStore(f.store)
	f.t.Cleanup(func() { s.Close() })
	return s
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.ws, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) edit(rel, content string) {
	f.t.Helper()
	if _, errs := f.c.Capture(context.Background(), controller.CaptureOptions{Paths: []string{rel}}); errs[0] != nil {
		f.t.Fatal(errs[0])
	}
	f.write(rel, content)
}

func (f *fixture) turn(p string) {
	f.t.Helper()
	if _, err := f.c.BeginTurn(context.Background(), p, controller.TurnOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) want(rel, content string) {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, rel))
	if err != nil || string(b) != content {
		f.t.Errorf("%s = %q, %v; want %q", rel, b, err, content)
	}
}

func has(t testing.TB, s cas.Store, content string) bool {
	t.Helper()
	ok, err := s.Has(context.Background(), cas.Sum([]byte(content)))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestGCKeepsBlobSharedByPrunedAndLiveTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "", "default")
	f.write("a.txt", "X")
	f.write("b.txt", "only turn 0 knew me")
	f.turn("t0")
	f.edit("a.txt", "Y")
	f.edit("b.txt", "b now")
	f.turn("t1")
	f.edit("a.txt", "X") // X again: turn 2 will capture it too
	f.turn("t2")
	f.edit("a.txt", "Z")

	st := f.storeAPI()
	plan, rep, err := st.Retain(ctx, keepTurns(1, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(plan, f.c.Session()); got != "ppk" {
		t.Fatalf("actions %s, want ppk", got)
	}
	if rep.Deleted == 0 {
		t.Errorf("gc deleted nothing; b.txt's original was referenced only by a pruned turn")
	}
	blobs := f.blobs()
	if has(t, blobs, "only turn 0 knew me") {
		t.Errorf("blob of the pruned turn survived gc")
	}
	if !has(t, blobs, "X") {
		t.Fatalf("gc deleted X, which the kept turn 2 still references")
	}
	if _, err := f.c.Rewind(ctx, controller.Target{Turn: 2}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	f.want("a.txt", "X")
	if _, err := f.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); !errors.Is(err, checkpoints.ErrPruned) {
		t.Errorf("code rewind to a pruned turn: %v, want ErrPruned", err)
	}
}

func TestPinnedAndUndoRecordsSurvivePruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "", "default")
	f.write("a.txt", "v0")
	f.turn("t0")
	f.edit("a.txt", "v1")
	f.turn("t1")
	f.edit("a.txt", "v2")
	f.write("a.txt", "hand edit") // a person edits after the agent
	if _, err := f.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	f.turn("t2")
	f.turn("t3")
	if err := f.c.Pin(ctx, 0, true, "baseline"); err != nil {
		t.Fatal(err)
	}
	st := f.storeAPI()
	for _, p := range []controller.RetainOptions{keepTurns(1, ""), {MaxAge: "1ns"}, {MaxAge: "0", MaxBytes: "1"}} {
		plan, _, err := st.Retain(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := actions(plan, f.c.Session()); got != "kkkk" {
			t.Fatalf("policy %+v: actions %s; a pinned turn 0 keeps every turn", p, got)
		}
	}
	if err := f.c.Pin(ctx, 0, false, ""); err != nil {
		t.Fatal(err)
	}
	plan, _, err := st.Retain(ctx, keepTurns(1, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(plan, f.c.Session()); got != "pppk" {
		t.Fatalf("unpinned: actions %s, want pppk", got)
	}
	// The undo record of the rewind survived pruning and gc: undo brings
	// the hand edit back byte-exact.
	if _, err := f.c.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	f.want("a.txt", "hand edit")
}

func TestGCRefusesEmptyOrUnreadableLiveSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	s := controller.OpenStore(store)
	defer s.Close()
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	for _, c := range []string{"one", "two"} {
		if _, _, err := blobs.Put(ctx, bytesReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	// No session at all: an empty live set deletes nothing.
	if _, _, err := s.Retain(ctx, controller.RetainOptions{CollectOnly: true}); !errors.Is(err, retention.ErrEmptyLiveSet) {
		t.Fatalf("collect with no sessions: %v, want ErrEmptyLiveSet", err)
	}
	// A session whose index cannot be read: nothing deleted either.
	f := newFixture(t, store, "good")
	f.write("a.txt", "referenced")
	f.turn("t")
	f.edit("a.txt", "x")
	bad := checkpoints.SessionDir(store, "bad")
	os.MkdirAll(bad, 0o700)
	if err := os.WriteFile(filepath.Join(bad, checkpoints.FileName), []byte("this is not a database, it is garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Retain(ctx, controller.RetainOptions{CollectOnly: true}); err == nil {
		t.Fatal("collect succeeded with an unreadable session index")
	}
	if !has(t, blobs, "one") || !has(t, blobs, "two") {
		t.Fatal("a collection that could not read every session deleted blobs")
	}
	os.RemoveAll(bad)
	_, rep, err := s.Retain(ctx, controller.RetainOptions{CollectOnly: true})
	if err != nil || rep.Deleted != 2 {
		t.Fatalf("collect = %+v, %v; want the two unreferenced blobs deleted", rep, err)
	}
}

// A store made before the registry has none: the first process to need it
// registers the session directories there are, so a session of such a
// store whose index is lost afterwards is still a session: opening it
// fails, a collection deletes nothing, and only a forced removal lets its
// blobs go.
func TestLostIndexOfStoreWithoutRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	f := newFixture(t, store, "old")
	f.write("a.txt", "kept")
	f.turn("t")
	f.edit("a.txt", "x")
	f.c.Close()
	if err := os.RemoveAll(filepath.Join(store, checkpoints.RegistryDir)); err != nil {
		t.Fatal(err)
	}
	dir := checkpoints.SessionDir(store, "old")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(dir, checkpoints.FileName+suffix))
	}
	_, err := controller.Open(ctx, controller.Options{Workspace: f.ws, Store: store, Session: "old", NoAutoRetention: true})
	if !errors.Is(err, retention.ErrNoIndex) {
		t.Fatalf("open a session whose index is lost: %v, want ErrNoIndex", err)
	}
	if _, err := os.Stat(filepath.Join(dir, checkpoints.FileName)); err == nil {
		t.Fatal("open made a new index in place of the lost one")
	}
	// Its directory gone too: the registry remembers it.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	s := controller.OpenStore(store)
	defer s.Close()
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	if _, _, err := s.Retain(ctx, controller.RetainOptions{CollectOnly: true, AllowEmpty: true}); !errors.Is(err, retention.ErrNoIndex) {
		t.Fatalf("collect with a lost session: %v, want ErrNoIndex", err)
	}
	if !has(t, blobs, "kept") {
		t.Fatal("a collection deleted the blob of a session whose index is lost")
	}
	if _, err := s.Verify(ctx, false, nil, nil); !errors.Is(err, retention.ErrNoIndex) {
		t.Fatalf("verify with a lost session: %v, want ErrNoIndex", err)
	}
	if _, _, err := s.RemoveSession(ctx, "old", false, false); !errors.Is(err, retention.ErrNoIndex) {
		t.Fatalf("remove a lost session unforced: %v, want ErrNoIndex", err)
	}
	r, rep, err := s.RemoveSession(ctx, "old", true, false)
	if err != nil || !r.Removed || rep.Deleted == 0 {
		t.Fatalf("forced removal = %+v, %+v, %v; want removed and its blobs collected", r, rep, err)
	}
	if has(t, blobs, "kept") {
		t.Fatal("the removed session's blob is still stored")
	}
}

// keepTurns is the policy that keeps session's newest n turns (every
// session's, for ""), with no age limit, whatever the store's defaults.
func keepTurns(n int, session string) controller.RetainOptions {
	return controller.RetainOptions{KeepTurns: &n, MaxAge: "0", Session: session}
}
