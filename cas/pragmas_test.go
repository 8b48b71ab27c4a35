package cas

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// checkPragmas accepts blobs.db as OpenDisk's DSN sets it up and names
// each setting that did not take: a database left in rollback-journal
// mode, a busy timeout or synchronous level other than the DSN's.
func TestCheckPragmas(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, query, want string
	}{
		{"as opened", dsnParams, ""},
		{"rollback journal", "_busy_timeout=10000&_pragma=synchronous(FULL)", "journal_mode=delete"},
		{"short timeout", "_busy_timeout=5&_journal_mode=WAL&_pragma=synchronous(FULL)", "busy_timeout=5"},
		{"normal sync", "_busy_timeout=10000&_journal_mode=WAL&_pragma=synchronous(NORMAL)", "synchronous=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "blobs.db"))+"?"+tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = checkPragmas(ctx, db)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("checkPragmas = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestStatementJournalInMemory: every pooled connection of blobs.db keeps
// temp data, statement journals among them, in memory (temp_store=2): a
// batch's INSERT ... SELECT per row wrote each statement's journal pages
// to a temp file once one had outgrown 64 KiB, two pwrite64 per file.
func TestStatementJournalInMemory(t *testing.T) {
	ctx := context.Background()
	d, err := OpenDisk(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Two connections at once: the setting is the DSN's, on each.
	var conns []*sql.Conn
	for range 2 {
		c, err := d.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		var store int
		if err := c.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&store); err != nil {
			t.Fatal(err)
		}
		if store != 2 {
			t.Errorf("connection %d: temp_store = %d, want 2 (MEMORY)", i, store)
		}
	}
}
