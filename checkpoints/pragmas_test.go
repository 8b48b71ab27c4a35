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
