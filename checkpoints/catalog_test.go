package checkpoints_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// later is a catalog clock an hour ahead: every index looks settled.
func later() time.Time { return time.Now().Add(time.Hour) }

// storeSession writes session id of store: one turn per prompt, each
// capturing "f" with content of the prompt, and closes it.
func storeSession(t testing.TB, store, sid string, prompts ...string) {
	t.Helper()
	ctx := context.Background()
	x, err := checkpoints.Open(ctx, checkpoints.SessionDir(store, sid))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.SetMeta(ctx, "workspace", "/ws/"+sid); err != nil {
		t.Fatal(err)
	}
	for _, p := range prompts {
		cp, err := x.BeginTurn(ctx, p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: "f", Content: id(p), Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

func opener(store string) checkpoints.OpenFunc {
	return func(ctx context.Context, id string) (*checkpoints.Index, error) {
		return checkpoints.Open(ctx, checkpoints.SessionDir(store, id))
	}
}

func catalog(t testing.TB, store string, now func() time.Time) *checkpoints.Catalog {
	t.Helper()
	c, err := checkpoints.OpenCatalog(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	checkpoints.SetCatalogClock(c, now)
	t.Cleanup(func() { c.Close() })
	return c
}

func sessions(t testing.TB, c *checkpoints.Catalog, store string) map[string]checkpoints.Summary {
	t.Helper()
	ss, err := c.Sessions(context.Background(), opener(store))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]checkpoints.Summary{}
	for _, s := range ss {
		if s.Err != nil {
			t.Fatalf("session %s: %v", s.ID, s.Err)
		}
		out[s.ID] = s
	}
	return out
}

// The catalog answers from its rows once the indexes have settled, gives
// what reading the indexes gives, and reads again exactly the index that
// changed.
func TestCatalogCachesAndSeesChanges(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	storeSession(t, store, "a", "one", "two")
	storeSession(t, store, "b", "three")
	storeSession(t, store, "c")
	c := catalog(t, store, later)
	first := sessions(t, c, store)
	if c.Read != 3 || c.Cached != 0 {
		t.Fatalf("first listing: read %d, cached %d; want 3, 0", c.Read, c.Cached)
	}
	again := sessions(t, c, store)
	if c.Read != 0 || c.Cached != 3 {
		t.Fatalf("second listing: read %d, cached %d; want 0, 3", c.Read, c.Cached)
	}
	for id, s := range first {
		if !reflect.DeepEqual(summaryKey(s), summaryKey(again[id])) {
			t.Errorf("session %s: from the catalog %+v, from the index %+v", id, summaryKey(again[id]), summaryKey(s))
		}
	}
	if a := again["a"]; a.Workspace != "/ws/a" || a.Active() != 2 || len(a.Refs) != 2 || a.LastUse.IsZero() {
		t.Errorf("summary of a: %+v", a)
	}
	// A new turn in b is seen at once, however soon after.
	storeSession(t, store, "b", "four")
	now := sessions(t, c, store)
	if c.Read != 1 || c.Cached != 2 {
		t.Errorf("after writing b: read %d, cached %d; want 1, 2", c.Read, c.Cached)
	}
	if b := now["b"]; b.Active() != 2 || len(b.Refs) != 2 {
		t.Errorf("b after a new turn: %d turns, %d refs; want 2, 2", b.Active(), len(b.Refs))
	}
}

// summaryKey is a Summary without what decoding changes (monotonic clock
// readings, order of blobs).
func summaryKey(s checkpoints.Summary) string {
	b, _ := checkpoints.EncodeSummaryForTest(s)
	return string(b)
}

// An index written moments ago is not trusted: its file times are too
// recent for a later write to be sure to change them.
func TestCatalogDoesNotTrustRecentWrites(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	storeSession(t, store, "a", "one")
	// The listings' clock stays at the moment the write ended: on the
	// real clock, a loaded machine's pause of the catalog's margin before
	// the second listing would make the write old enough to trust.
	written := time.Now()
	c := catalog(t, store, func() time.Time { return written })
	sessions(t, c, store)
	sessions(t, c, store)
	if c.Read != 1 {
		t.Errorf("listing right after a write: read %d; want 1", c.Read)
	}
}

// An index open in another process with commits in its WAL, and an index
// replaced by another file, are read again.
func TestCatalogReadsOpenAndReplacedIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	storeSession(t, store, "a", "one")
	storeSession(t, store, "b", "two", "three")
	c := catalog(t, store, later)
	sessions(t, c, store)

	x, err := checkpoints.Open(ctx, checkpoints.SessionDir(store, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.BeginTurn(ctx, "open", nil, nil); err != nil {
		t.Fatal(err)
	}
	got := sessions(t, c, store)
	if c.Read != 1 || got["a"].Active() != 2 {
		t.Errorf("index with a WAL: read %d, %d turns; want 1, 2", c.Read, got["a"].Active())
	}

	// b's index replaced by a copy of a third session's, same size or not.
	storeSession(t, store, "c", "x", "y")
	sessions(t, c, store)
	src, err := os.ReadFile(filepath.Join(checkpoints.SessionDir(store, "c"), checkpoints.FileName))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(checkpoints.SessionDir(store, "b"), "new.db")
	if err := os.WriteFile(tmp, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(checkpoints.SessionDir(store, "b"), checkpoints.FileName)); err != nil {
		t.Fatal(err)
	}
	got = sessions(t, c, store)
	if w := got["b"].Workspace; w != "/ws/c" {
		t.Errorf("replaced index: workspace %q; want /ws/c", w)
	}
}

// A catalog that is not a database is rebuilt; rows of removed sessions
// go; a staging directory a crashed creation left is deleted once old.
func TestCatalogRepairsAndCleans(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	storeSession(t, store, "a", "one")
	storeSession(t, store, "b", "two")
	if err := os.WriteFile(filepath.Join(store, "catalog.db"), []byte("not a database at all, not even close to one, no"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(store, "sessions", ".new-x-123")
	fresh := filepath.Join(store, "sessions", ".new-y-456")
	for _, d := range []string{old, fresh} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	c := catalog(t, store, time.Now)
	if got := sessions(t, c, store); len(got) != 2 || got["a"].Active() != 1 {
		t.Fatalf("with a garbage catalog: %v", got)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old staging directory: %v; want it gone", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh staging directory: %v; want it kept", err)
	}
	// Removed as retention removes a session: unregistered, then deleted.
	if err := checkpoints.Unregister(store, "a"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(checkpoints.SessionDir(store, "a")); err != nil {
		t.Fatal(err)
	}
	sessions(t, c, store)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(store, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sessions`).Scan(&n); err != nil || n != 1 {
		t.Errorf("catalog rows after removing a: %d, %v; want 1", n, err)
	}
}

// Summaries survive encoding: every field, blobs named once.
func TestSummaryEncoding(t *testing.T) {
	t.Parallel()
	a, b := cas.Sum([]byte("a")), cas.Sum([]byte("b"))
	s := checkpoints.Summary{
		Workspace: "/w", Origin: checkpoints.Origin{Session: "p", Turn: 3}, LastUse: time.Unix(5, 6),
		Turns: []checkpoints.TurnRecord{
			{ID: 1, Seq: 2, Number: 0, Hidden: true, Time: time.Unix(1, 0), Blobs: []cas.ID{a}},
			{ID: 3, Seq: 9, Number: 0, Pinned: true, Pruned: true, Time: time.Unix(2, 0), Blobs: []cas.ID{b, a}},
		},
		Undo: []cas.ID{b}, Refs: []cas.ID{b, a},
	}
	enc, got := checkpoints.EncodeSummaryForTest(s)
	if got.Workspace != "/w" || got.Origin != s.Origin || !got.LastUse.Equal(s.LastUse) || len(got.Refs) != 2 ||
		len(got.Turns) != 2 || !got.Turns[0].Hidden || !got.Turns[1].Pinned || !got.Turns[1].Pruned ||
		got.Turns[1].Seq != 9 || len(got.Turns[1].Blobs) != 2 || len(got.Undo) != 1 || got.Undo[0] != b {
		t.Errorf("decoded %+v; want %+v", got, s)
	}
	if enc2, _ := checkpoints.EncodeSummaryForTest(got); string(enc2) != string(enc) {
		t.Errorf("re-encoding differs")
	}
	for i := range enc {
		if _, err := checkpoints.DecodeSummaryForTest(enc[:i]); err == nil {
			t.Fatalf("truncated at %d decoded without error", i)
		}
	}
}
