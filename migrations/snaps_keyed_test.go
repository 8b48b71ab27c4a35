package migrations_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/migrations"
)

// An index at version 9 with rows in every table keeps every snapshot and
// every change through migration 10, which keys snaps by seq and names
// paths by number: named_snaps reads the rows as they were, the schema is
// then the one a new index gets, and the first capture of a path in a
// turn still wins, writes the change log and needs its turn and its path.
func TestSnapsKeyedKeepsEveryRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := indexAt9(t)
	tabs := []string{"snaps", "changes", "turns", "step_snaps"}
	before := map[string][]string{}
	for _, tb := range tabs {
		before[tb] = dump(t, db, tb)
	}
	if len(before["snaps"]) != 3 {
		t.Fatalf("the test wants 3 snapshots at version 9, has %q", before["snaps"])
	}

	if err := migrations.Apply(ctx, db, migrations.Index); err != nil {
		t.Fatal(err)
	}
	if v, err := migrations.Version(ctx, db); err != nil || v != 10 {
		t.Fatalf("version %d, %v; want 10", v, err)
	}
	for _, tb := range tabs {
		read := tb
		if tb == "snaps" {
			read = "named_snaps"
		}
		if got := dump(t, db, read); !slices.Equal(got, before[tb]) {
			t.Errorf("%s after the migration:\n%s\nwant:\n%s", tb, strings.Join(got, "\n"), strings.Join(before[tb], "\n"))
		}
	}
	fresh := openFK(t)
	if err := migrations.Apply(ctx, fresh, migrations.Index); err != nil {
		t.Fatal(err)
	}
	got, _, _ := schema(t, db)
	want, _, _ := schema(t, fresh)
	if !strings.Contains(want["table snaps"], "seq INTEGER PRIMARY KEY") || want["index snaps_path"] == "" || want["index snaps_turn_path"] == "" ||
		want["table paths"] == "" || want["view named_snaps"] == "" {
		t.Fatalf("a new index's snaps: %q", want)
	}
	if got := dump(t, db, "paths"); !slices.Equal(got, []string{"1,'a.go'", "2,'n/new.txt'"}) {
		t.Errorf("paths after the migration: %q", got)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("%s after the migration:\n%s\nin a new index:\n%s", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s only in the migrated index", k)
		}
	}
	if tables(t, db)["old_snaps"] {
		t.Error("old_snaps is still there")
	}
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}

	// Turn 2 has a.go (path 1) already: a second capture is ignored. A
	// capture in turn 3 is recorded and logged with its path. A snapshot
	// needs its turn and its path; two need two seqs.
	res, err := db.Exec(`INSERT OR IGNORE INTO snaps (turn_id, path_id, seq, blob, mode, size) VALUES (2, 1, 30, x'ff', 420, 1)`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Error("a second snapshot of a.go in turn 2 was recorded")
	}
	if _, err := db.Exec(`INSERT OR IGNORE INTO snaps (turn_id, path_id, seq, blob, mode, size) VALUES (3, 1, 31, x'ee', 420, 1)`); err != nil {
		t.Fatal(err)
	}
	var kind, path string
	var turn int
	if err := db.QueryRow(`SELECT kind, turn, path FROM changes ORDER BY id DESC LIMIT 1`).Scan(&kind, &turn, &path); err != nil {
		t.Fatal(err)
	}
	if kind != "captured" || turn != 1 || path != "a.go" {
		t.Errorf("last change %s %d %s; want captured 1 a.go", kind, turn, path)
	}
	if _, err := db.Exec(`INSERT INTO snaps (turn_id, path_id, seq, mode, size) VALUES (99, 2, 32, 0, 0)`); err == nil {
		t.Error("a snapshot of a missing turn was accepted")
	}
	if _, err := db.Exec(`INSERT INTO snaps (turn_id, path_id, seq, mode, size) VALUES (3, 99, 32, 0, 0)`); err == nil {
		t.Error("a snapshot of a missing path was accepted")
	}
	if _, err := db.Exec(`INSERT INTO snaps (turn_id, path_id, seq, mode, size) VALUES (3, 2, 31, 0, 0)`); err == nil {
		t.Error("a second snapshot at seq 31 was accepted")
	}
}

// A migration 10 that fails half-way (here on a row whose seq the new
// table refuses, after the old table was renamed and its index and
// trigger dropped) is rolled back whole: the index stays at version 9
// with the old snaps table, its index and its trigger, and every row.
func TestSnapsKeyedFailureLeavesVersion9(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := indexAt9(t)
	if _, err := db.Exec(`INSERT INTO snaps (turn_id, path, seq, mode, size) VALUES (3, 'bad', 'not a number', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	schemaBefore, _, _ := schema(t, db)
	rows := dump(t, db, "snaps")

	if err := migrations.Apply(ctx, db, migrations.Index); err == nil || !strings.Contains(err.Error(), "0010") {
		t.Fatalf("apply: %v; want migration 10 to fail", err)
	}
	if v, err := migrations.Version(ctx, db); err != nil || v != 9 {
		t.Errorf("version %d, %v; want 9", v, err)
	}
	schemaAfter, _, _ := schema(t, db)
	if len(schemaAfter) != len(schemaBefore) {
		t.Errorf("%d schema objects after the failed migration, %d before", len(schemaAfter), len(schemaBefore))
	}
	for k, w := range schemaBefore {
		if schemaAfter[k] != w {
			t.Errorf("%s after the failed migration:\n%s\nbefore:\n%s", k, schemaAfter[k], w)
		}
	}
	if got := dump(t, db, "snaps"); !slices.Equal(got, rows) {
		t.Errorf("snaps after the failed migration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(rows, "\n"))
	}
	// Without the row the new table refuses, it goes through.
	if _, err := db.Exec(`DELETE FROM snaps WHERE path = 'bad'`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Apply(ctx, db, migrations.Index); err != nil {
		t.Fatal(err)
	}
	if v, err := migrations.Version(ctx, db); err != nil || v != 10 {
		t.Errorf("version %d, %v; want 10", v, err)
	}
}

// indexAt9 is an index migrated to version 9 with v8Rows in every table.
func indexAt9(t *testing.T) *sql.DB {
	t.Helper()
	ctx := context.Background()
	db := openFK(t)
	if err := migrations.ApplyUpTo(ctx, db, migrations.Index, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(v8Rows); err != nil {
		t.Fatal(err)
	}
	if err := migrations.ApplyUpTo(ctx, db, migrations.Index, 9); err != nil {
		t.Fatal(err)
	}
	return db
}
