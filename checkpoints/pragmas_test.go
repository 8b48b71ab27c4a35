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

// Every connection of an index keeps a page cache of cacheSize (256 KiB),
// not SQLite's default 2 MiB: a first scan's save of the stat cache and
// manifest spills its dirty pages to the WAL instead of holding them in C
// memory until the commit.
func TestIndexCacheSize(t *testing.T) {
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var n int64
	if err := x.db.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != -256 {
		t.Fatalf("cache_size = %d, want -256 (KiB)", n)
	}
}
