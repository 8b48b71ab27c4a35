package retention_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/migrations"
	"github.com/ckpt/ckpt/retention"
)

// snapsV9 puts a session index's snaps table back into the form index
// schema version 9 gave it (the turn and the path's text as its primary
// key, a UNIQUE index on seq, no paths table), rows unchanged, and records
// the index at version 9: the index a ckpt of that version left.
const snapsV9 = `
DROP VIEW named_snaps;
ALTER TABLE snaps RENAME TO new_snaps;
DROP INDEX snaps_turn_path;
DROP INDEX snaps_path;
DROP TRIGGER changes_captured;
CREATE TABLE snaps(turn_id INT REFERENCES turns,path TEXT,seq INT NOT NULL UNIQUE,blob BLOB,mode INT NOT NULL,size INT NOT NULL,dirs TEXT NOT NULL DEFAULT'',end_state INT NOT NULL DEFAULT 0,end_blob BLOB,end_mode INT NOT NULL DEFAULT 0,lost INT NOT NULL DEFAULT 0,step INT NOT NULL DEFAULT 0,PRIMARY KEY(turn_id,path))WITHOUT ROWID;
INSERT INTO snaps SELECT n.turn_id, p.path, n.seq, n.blob, n.mode, n.size, n.dirs, n.end_state, n.end_blob, n.end_mode, n.lost, n.step
	FROM new_snaps n JOIN paths p ON p.id = n.path_id;
DROP TABLE new_snaps;
DROP TABLE paths;
CREATE INDEX snaps_path_seq ON snaps(path,seq);
CREATE TRIGGER changes_captured AFTER INSERT ON snaps BEGIN INSERT INTO changes(kind,turn,path)SELECT'captured',number,NEW.path FROM turns WHERE id=NEW.turn_id;END;
DELETE FROM schema_migrations WHERE version > 9;
PRAGMA user_version = 9;
`

// A session index written at schema version 9, migrated when the
// collector opens it, still names every blob its snapshots name: a
// collection keeps them all (one named only as a snapshot's end state),
// deletes only the blob nothing names, verify then finds nothing
// missing, and a rewind to the first turn puts its files back.
func TestCollectKeepsBlobsOfMigratedIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "", "old")
	f.write("a.txt", "a at turn 0")
	f.write("b.txt", "b at turn 0")
	f.turn("t0")
	f.edit("a.txt", "a at turn 1")
	f.edit("b.txt", "b at turn 1")
	f.turn("t1") // records a.txt's and b.txt's end states: named by end_blob only
	f.edit("b.txt", "b at turn 2")
	f.turn("t2")
	f.c.Close()

	idx, err := filepath.Glob(filepath.Join(f.store, "sessions", "*", checkpoints.FileName))
	if err != nil || len(idx) != 1 {
		t.Fatalf("session index: %v, %v", idx, err)
	}
	db, err := sql.Open("sqlite", checkpoints.DSN(idx[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(snapsV9); err != nil {
		t.Fatal(err)
	}
	var named, endOnly int
	if err := db.QueryRow(`SELECT count(DISTINCT b) FROM (SELECT blob b FROM snaps UNION ALL SELECT end_blob FROM snaps) WHERE b IS NOT NULL`).Scan(&named); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM snaps s WHERE end_blob IS NOT NULL AND NOT EXISTS (SELECT 1 FROM snaps WHERE blob = s.end_blob)`).Scan(&endOnly); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if named != 5 || endOnly != 2 {
		t.Fatalf("the old index names %d blobs, %d only as an end state; the test wants 5 and 2", named, endOnly)
	}

	blobs := f.blobs()
	if _, _, err := blobs.Put(ctx, bytesReader("nobody names me")); err != nil {
		t.Fatal(err)
	}
	rep, err := retention.Collect(ctx, f.store, blobs, retention.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 1 || has(t, blobs, "nobody names me") {
		t.Errorf("collect deleted %d blobs; want only the unnamed one", rep.Deleted)
	}
	for _, c := range []string{"a at turn 0", "b at turn 0", "a at turn 1", "b at turn 1", "b at turn 2"} {
		if !has(t, blobs, c) {
			t.Errorf("collect deleted %q, which the migrated index names", c)
		}
	}

	db, err = sql.Open("sqlite", checkpoints.DSN(idx[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := migrations.Version(ctx, db)
	if err != nil || v != migrations.Index.Latest() {
		t.Errorf("index at version %d after the collection, %v; want it migrated to %d", v, err, migrations.Index.Latest())
	}
	var ddl string
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'snaps'`).Scan(&ddl); err != nil || strings.Contains(ddl, "WITHOUT ROWID") {
		t.Errorf("snaps after the collection: %s, %v", ddl, err)
	}
	vr, err := retention.Verify(ctx, f.store, blobs, false, nil, nil)
	if err != nil || !vr.OK() {
		t.Errorf("verify after the collection: %+v, %v", vr, err)
	}

	// Every recorded state is still reachable: a code rewind to turn 0
	// puts back what the old index recorded there.
	c, err := controller.Open(ctx, controller.Options{Workspace: f.ws, Store: f.store, Session: "old", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	f.want("a.txt", "a at turn 0")
	f.want("b.txt", "b at turn 0")
}
