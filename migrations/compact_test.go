package migrations_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/migrations"
)

// openFK opens a database the way the session index does: WAL, immediate
// write transactions and foreign keys on.
func openFK(t testing.TB) *sql.DB {
	t.Helper()
	p := filepath.Join(t.TempDir(), "index.db")
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// v8Rows fills every table of an index at version 8 the way ckpt writes
// them: two turns and a hidden one, captures, a step, a rewind and its
// undo, messages, a summary, two manifests (one a delta), a skip, the
// stat cache with two directory buckets, and the change log the triggers
// wrote.
const v8Rows = `
INSERT INTO meta (key, value) VALUES ('workspace', '/w'), ('agent', 'claude');
UPDATE clock SET n = 20 WHERE id = 1;
INSERT INTO manifests (id, hash) VALUES (1, x'01');
INSERT INTO manifests (id, hash, base, depth) VALUES (2, x'02', 1, 1);
INSERT INTO manifest_files (manifest_id, path, blob, mode, size, lost) VALUES (1, 'a.go', x'a1', 420, 3, 0), (1, 'x.sh', x'a2', 493, 9, 1);
INSERT INTO manifest_files (manifest_id, path, blob, mode, size, gone) VALUES (2, 'x.sh', x'', 0, 0, 1);
INSERT INTO manifest_skips (manifest_id, path, reason) VALUES (1, 'big.bin', 'size');
INSERT INTO turns (id, seq, number, prompt, time, manifest_id) VALUES (1, 1, 0, 'first', 100, 1);
INSERT INTO steps (turn_id, number, seq, key, tool, time) VALUES (1, 1, 3, 'toolu_1', 'Edit', 103), (1, 2, 4, '', 'Bash', 104);
INSERT INTO snaps (turn_id, path, seq, blob, mode, size, step) VALUES (1, 'a.go', 2, x'b1', 420, 3, 0);
INSERT INTO step_snaps (turn_id, step, path, seq, blob, mode, size, dirs) VALUES (1, 2, 'n/new.txt', 5, NULL, 0, 0, 'n');
INSERT INTO turns (id, seq, number, prompt, time, manifest_id) VALUES (2, 6, 1, 'second', 106, 2);
UPDATE snaps SET end_state = 1, end_blob = x'b2', end_mode = 420 WHERE turn_id = 1;
INSERT INTO snaps (turn_id, path, seq, blob, mode, size, dirs, lost) VALUES (2, 'n/new.txt', 7, NULL, 0, 0, 'n', 0), (2, 'a.go', 8, x'b2', 420, 4, '', 1);
INSERT INTO messages (id, turn_id, role, text, time) VALUES (1, 1, 'user', 'first', 100), (2, 1, 'assistant', 'done', 101), (3, 2, 'user', 'second', 106);
INSERT INTO ops (id, seq, kind, turn, scope, state, prompt, time, conv_recorded, step) VALUES (1, 10, 'rewind', 1, 'both', 'planned', 'second', 110, 1, 0);
INSERT INTO op_files (op_id, path, seq, before_blob, before_mode, before_size, after_blob, after_mode, after_size, before_dirs, after_dirs)
	VALUES (1, 'a.go', 11, x'b3', 420, 5, x'b2', 420, 4, '', ''), (1, 'n/new.txt', 12, x'c1', 420, 1, NULL, 0, 0, '', 'n');
UPDATE turns SET hidden_by = 1 WHERE id = 2;
UPDATE messages SET hidden_by = 1 WHERE id = 3;
INSERT INTO op_conv (op_id, what, row_id, shown_before) VALUES (1, 'turn', 2, 1), (1, 'message', 3, 1);
UPDATE ops SET state = 'done' WHERE id = 1;
INSERT INTO turns (id, seq, number, prompt, time) VALUES (3, 13, 1, 'second again', 113);
INSERT INTO ops (id, seq, kind, turn, scope, state, time, action) VALUES (2, 14, 'rewind', 1, 'conversation', 'planned', 114, 'summarize_up_to');
INSERT INTO messages (id, turn_id, role, text, time, added_by) VALUES (4, 3, 'system', 'summary', 114, 2);
UPDATE messages SET hidden_by = 2 WHERE id IN (1, 2);
UPDATE ops SET state = 'done' WHERE id = 2;
INSERT INTO ops (id, seq, kind, turn, scope, state, undoes, time, revert) VALUES (3, 15, 'undo', 1, 'conversation', 'undone', 2, 115, 1);
UPDATE turns SET pinned = 1, label = 'keep' WHERE id = 1;
INSERT INTO statcache (id, data) VALUES (1, x'00ff');
INSERT INTO statcache_dirs (bucket, data) VALUES (0, x'aa'), (255, x'bb');
`

// dump returns every row of table as text, in primary key order.
func dump(t testing.TB, db *sql.DB, table string) []string {
	t.Helper()
	rs, err := db.Query(`SELECT ` + quoteCols(t, db, table) + ` FROM ` + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// An index built by migrations 1..8, with rows in every table, keeps every
// row and every id through migration 9; the clock moves into meta, the
// stat cache's directory rows into statcache; the schema is then the one a
// new index gets, the foreign keys hold, and the triggers and ids go on.
func TestCompactKeepsEveryRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFK(t)
	if err := migrations.ApplyUpTo(ctx, db, migrations.Index, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(v8Rows); err != nil {
		t.Fatal(err)
	}
	kept := []string{"meta", "ops", "turns", "snaps", "op_files", "messages", "manifests", "manifest_files",
		"manifest_skips", "statcache", "op_conv", "changes", "steps", "step_snaps"}
	before := map[string][]string{}
	for _, tb := range append(kept, "clock", "statcache_dirs") {
		before[tb] = dump(t, db, tb)
		if len(before[tb]) == 0 {
			t.Fatalf("the test leaves table %s empty", tb)
		}
	}

	if err := migrations.Apply(ctx, db, migrations.Index); err != nil {
		t.Fatal(err)
	}
	if v, err := migrations.Version(ctx, db); err != nil || v != migrations.Index.Latest() {
		t.Fatalf("version %d, %v; want %d", v, err, migrations.Index.Latest())
	}
	want := map[string][]string{}
	for _, tb := range kept {
		want[tb] = slices.Clone(before[tb])
	}
	want["meta"] = append(want["meta"], "'clock',20")
	want["statcache"] = append(want["statcache"], "-1,X'AA'", "-256,X'BB'")
	for _, tb := range kept {
		w := want[tb]
		slices.Sort(w)
		read := tb
		if tb == "snaps" { // snaps names paths by number since migration 10
			read = "named_snaps"
		}
		if got := dump(t, db, read); !slices.Equal(got, w) {
			t.Errorf("%s after the migration:\n%s\nwant:\n%s", tb, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
	for _, gone := range []string{"clock", "statcache_dirs"} {
		if tables(t, db)[gone] {
			t.Errorf("table %s is still there", gone)
		}
	}

	// The schema is exactly the one a new index is created with.
	fresh := openFK(t)
	if err := migrations.Apply(ctx, fresh, migrations.Index); err != nil {
		t.Fatal(err)
	}
	got, _, _ := schema(t, db)
	w, _, _ := schema(t, fresh)
	for k := range w {
		if got[k] != w[k] {
			t.Errorf("%s after the migration:\n%s\nin a new index:\n%s", k, got[k], w[k])
		}
	}
	for k := range got {
		if _, ok := w[k]; !ok {
			t.Errorf("%s only in the migrated index", k)
		}
	}

	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}
	var broken int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&broken); err != nil || broken != 0 {
		t.Errorf("foreign key check: %d rows, %v", broken, err)
	}
	var fk int
	if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v after the migration; want 1", fk, err)
	}

	// The triggers write the change log and new rows take the next ids.
	if _, err := db.Exec(`UPDATE meta SET value = value + 1 WHERE key = 'clock';
		INSERT INTO turns (seq, number, prompt, time) VALUES (21, 2, 'third', 121)`); err != nil {
		t.Fatal(err)
	}
	var id, lastChange, turn int
	var kind string
	if err := db.QueryRow(`SELECT max(id) FROM turns`).Scan(&id); err != nil || id != 4 {
		t.Errorf("new turn id %d, %v; want 4", id, err)
	}
	if err := db.QueryRow(`SELECT id, kind, turn FROM changes ORDER BY id DESC LIMIT 1`).Scan(&lastChange, &kind, &turn); err != nil {
		t.Fatal(err)
	}
	if kind != "turn_opened" || turn != 2 || lastChange != len(before["changes"])+1 {
		t.Errorf("last change %d %s %d; want %d turn_opened 2", lastChange, kind, turn, len(before["changes"])+1)
	}
	// Foreign keys are enforced again.
	if _, err := db.Exec(`INSERT INTO snaps (turn_id, path_id, seq, mode, size) VALUES (99, 1, 22, 0, 0)`); err == nil {
		t.Error("a snapshot of a missing turn was accepted")
	}
}

// A rebuild that would leave a row naming a missing row is refused and
// rolled back whole: the index stays at version 8 with its tables.
func TestCompactRefusesBrokenForeignKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFK(t)
	if err := migrations.ApplyUpTo(ctx, db, migrations.Index, 8); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO snaps (turn_id, path, seq, mode, size) VALUES (7, 'a', 1, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	conn.ExecContext(ctx, `PRAGMA foreign_keys = ON`)
	conn.Close()

	err = migrations.Apply(ctx, db, migrations.Index)
	if err == nil || !strings.Contains(err.Error(), "foreign key") {
		t.Fatalf("apply: %v; want a foreign key error", err)
	}
	if v, err := migrations.Version(ctx, db); err != nil || v != 8 {
		t.Errorf("version %d, %v; want 8", v, err)
	}
	if got := tables(t, db); !got["clock"] || !got["statcache_dirs"] || got["old_snaps"] {
		t.Errorf("tables after the refused migration: %v", got)
	}
	if rows := dump(t, db, "snaps"); len(rows) != 1 {
		t.Errorf("snaps after the refused migration: %q", rows)
	}
}

// Several processes opening one old index at once: one rebuilds it, the
// others wait and find it done, and every row is there once.
func TestCompactConcurrentApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "index.db")
	dsn := "file:" + p + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	old, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrations.ApplyUpTo(ctx, old, migrations.Index, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(v8Rows); err != nil {
		t.Fatal(err)
	}
	want := dump(t, old, "turns")
	old.Close()

	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			db, err := sql.Open("sqlite", dsn)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			errs <- migrations.Apply(ctx, db, migrations.Index)
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Errorf("concurrent apply: %v", err)
		}
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := dump(t, db, "turns"); !slices.Equal(got, want) {
		t.Errorf("turns after concurrent upgrades:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := versions(t, db); !strings.Contains(got, "; 9 0009_compact.sql") || strings.Count(got, "0009") != 1 {
		t.Errorf("recorded versions %q", got)
	}
}
