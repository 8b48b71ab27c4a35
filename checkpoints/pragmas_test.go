package checkpoints

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// checkPragmas accepts an index opened with DSN and names a journal mode
// or busy timeout that did not take.
func TestCheckPragmas(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"as opened", DSN(filepath.Join(t.TempDir(), FileName)), ""},
		{"rollback journal", "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), FileName)) + "?_busy_timeout=10000", "journal_mode is \"delete\""},
		{"short timeout", "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), FileName)) + "?_busy_timeout=5&_pragma=journal_mode(WAL)", "busy_timeout is 5 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sql.Open("sqlite", tc.dsn)
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

// A scan's large writes (writeSpilling: the stat cache, a first scan's
// manifest) run with a page cache of 256 KiB, so their dirty pages spill
// to the WAL instead of staying in C memory until the commit; the
// connection then goes back to the pool with SQLite's default cache, which
// every other write (a capture of many paths) keeps.
func TestWriteSpillingCacheSize(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.db.SetMaxOpenConns(1) // the connection writeSpilling used is the one read after
	size := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int64 {
		var n int64
		if err := q.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	def := size(x.db)
	if def != -2000 {
		t.Fatalf("cache_size of a pooled connection = %d, want SQLite's default -2000", def)
	}
	var in int64
	if err := x.writeSpilling(ctx, func(tx *sql.Tx) error { in = size(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if in != -256 {
		t.Errorf("cache_size in writeSpilling's transaction = %d, want -256 (KiB)", in)
	}
	if got := size(x.db); got != def {
		t.Errorf("cache_size after writeSpilling = %d, want %d again", got, def)
	}
}
