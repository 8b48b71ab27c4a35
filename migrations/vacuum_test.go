package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ckpt/ckpt/migrations"
)

// TestVacuumModes starts Vacuum from every auto-vacuum mode a database can
// be in: none (made before ckpt set it), full (a crash between Vacuum's two
// switches) and incremental, with a few or most of its pages free. Each
// ends incremental with no free page and every kept row intact.
func TestVacuumModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		create bool   // made by migrations.Create, as ckpt makes its files
		full   string // run before the delete
		want   int    // PRAGMA auto_vacuum before Vacuum
	}{
		{"none", false, "", 0},
		{"full", true, "PRAGMA auto_vacuum = FULL", 1},
		{"incremental", true, "", 2},
	} {
		for _, keep := range []int{10, 190} {
			t.Run(fmt.Sprintf("%s/keep%d", tc.name, keep), func(t *testing.T) {
				ctx := context.Background()
				path := filepath.Join(t.TempDir(), "t.db")
				if tc.create {
					if err := migrations.Create(ctx, path, 512); err != nil {
						t.Fatal(err)
					}
				}
				db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				for _, q := range []string{
					`CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)`,
					`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
					 INSERT INTO t SELECT i, randomblob(8000) FROM n`,
					tc.full,
					`DELETE FROM t WHERE k > ` + strconv.Itoa(keep),
				} {
					if _, err := conn.ExecContext(ctx, q); q != "" && err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				var before int
				if err := conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&before); err != nil || before != tc.want {
					t.Fatalf("auto_vacuum %d before Vacuum (%v), want %d", before, err, tc.want)
				}
				if err := migrations.Vacuum(ctx, conn); err != nil {
					t.Fatal(err)
				}
				var got, free, rows int
				if err := conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE length(v) = 8000`).Scan(&rows); err != nil {
					t.Fatal(err)
				}
				if got != 2 || free != 0 || rows != keep {
					t.Errorf("after Vacuum: auto_vacuum %d, %d free pages, %d rows; want 2, 0, %d", got, free, rows, keep)
				}
				var check string
				if err := conn.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
					t.Errorf("integrity_check: %q, %v", check, err)
				}
			})
		}
	}
}
