package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/migrations"
)

// oldIndex writes, in dir, an index at schema version upTo as a ckpt of that
// version made it: the migrations applied one by one and recorded, then
// rows.
func oldIndex(t testing.TB, dir string, upTo int, rows func(db *sql.DB)) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := migrations.Create(ctx, path, PageSize); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ms, err := migrations.Index.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:upTo] {
		if _, err := db.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := db.Exec(`INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	rows(db)
}

// A session written before the compact schema (version 8) opens, upgraded,
// with its turn, capture, step, clock and stat cache, and goes on.
func TestOpenUpgradesVersion8(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	v0 := sum("v0")
	cached := StatEntry{Path: "a.txt", Size: 2, MTime: 1e9, CTime: 1e9, Inode: 7, Mode: 0o644, Blob: v0, Checked: 9e9}
	exec := func(db *sql.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	oldIndex(t, dir, 8, func(db *sql.DB) {
		exec(db, `INSERT INTO meta (key, value) VALUES ('workspace', '/w')`)
		exec(db, `INSERT INTO turns (seq, number, prompt, time) VALUES (1, 0, 'first', 100)`)
		exec(db, `INSERT INTO snaps (turn_id, path, seq, blob, mode, size) VALUES (1, 'a.txt', 2, ?, 420, 2)`, v0[:])
		exec(db, `INSERT INTO steps (turn_id, number, seq, key, tool, time) VALUES (1, 1, 3, 'toolu_1', 'Edit', 103)`)
		exec(db, `INSERT INTO step_snaps (turn_id, step, path, seq, blob, mode, size) VALUES (1, 1, 'a.txt', 4, ?, 420, 2)`, v0[:])
		exec(db, `UPDATE clock SET n = 4`)
		exec(db, `INSERT INTO statcache (id, data) VALUES (1, ?)`, encodeStats(nil, cas.ID{}, 1))
		exec(db, `INSERT INTO statcache_dirs (bucket, data) VALUES (?, ?)`, dirBucket(""), encodeStats([]StatEntry{cached}, cas.ID{}, 0))
	})

	x, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	cps, err := x.Checkpoints(ctx)
	if err != nil || len(cps) != 1 || len(cps[0].Files) != 1 || *cps[0].Files[0].Content != v0 {
		t.Fatalf("Checkpoints after the upgrade: %+v, %v", cps, err)
	}
	sc, err := x.StatCache(ctx)
	if err != nil || sc["a.txt"] != cached {
		t.Fatalf("stat cache after the upgrade: %+v, %v; want %+v", sc, err, cached)
	}
	st, err := x.StepOf(ctx, 0, 1)
	if err != nil || st.Key != "toolu_1" || st.Seq != 3 || len(st.Files) != 1 {
		t.Fatalf("step 0.1 after the upgrade: %+v, %v", st, err)
	}
	// The same key finds the old step rather than opening another.
	again, opened, err := x.BeginStep(ctx, "toolu_1", "Edit")
	if err != nil || opened || again.Number != 1 {
		t.Fatalf("BeginStep with the old key: %+v, opened %v, %v", again, opened, err)
	}
	// The clock goes on from where the old index left it.
	cp, err := x.BeginTurn(ctx, "second", nil, nil)
	if err != nil || cp.Turn != 1 || cp.Seq != 5 || cp.ID != 2 {
		t.Fatalf("BeginTurn after the upgrade: turn %d seq %d id %d, %v; want 1, 5, 2", cp.Turn, cp.Seq, cp.ID, err)
	}
	v1 := sum("v1")
	if _, err := x.AddSnaps(ctx, cp.ID, []FileSnap{{Path: "a.txt", Content: &v1, Mode: 0o644, Size: 2}}); err != nil {
		t.Fatal(err)
	}
	// From turn 0, a.txt's first event is the old capture; from turn 1,
	// the new one.
	for _, c := range []struct {
		seq  int64
		want cas.ID
	}{{1, v0}, {cp.Seq, v1}} {
		got, err := x.Earliest(ctx, c.seq)
		if err != nil || got["a.txt"].Content == nil || *got["a.txt"].Content != c.want {
			t.Errorf("Earliest(%d) = %+v, %v; want a.txt at %s", c.seq, got, err, c.want.Short())
		}
	}
	// The clock's key is the index's own.
	if err := x.SetMeta(ctx, "clock", "0"); !errors.Is(err, errReservedKey) {
		t.Errorf("SetMeta(clock) = %v; want it refused", err)
	}
	if _, err := x.InitMeta(ctx, "clock", "0"); !errors.Is(err, errReservedKey) {
		t.Errorf("InitMeta(clock) = %v; want it refused", err)
	}
	if ws, err := x.Meta(ctx, "workspace"); err != nil || ws != "/w" {
		t.Errorf("workspace after the upgrade: %q, %v", ws, err)
	}
}
