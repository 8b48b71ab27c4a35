package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/migrations"
	_ "modernc.org/sqlite"
)

func openDB(t testing.TB) *sql.DB {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tables(t testing.TB, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

func TestApplyFreshAndTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		set  migrations.Set
		want []string
	}{
		{migrations.Index, []string{"turns", "snaps", "messages", "ops", "op_files", "meta"}},
		{migrations.CAS, []string{"blobs"}},
	} {
		t.Run(tc.set.String(), func(t *testing.T) {
			db := openDB(t)
			if err := migrations.Apply(ctx, db, tc.set); err != nil {
				t.Fatalf("first apply: %v", err)
			}
			got := tables(t, db)
			for _, w := range append(tc.want, "schema_migrations") {
				if !got[w] {
					t.Errorf("table %s missing after apply; have %v", w, got)
				}
			}
			v, err := migrations.Version(ctx, db)
			if err != nil || v != tc.set.Latest() || v < 1 {
				t.Fatalf("version = %d, %v; want %d", v, err, tc.set.Latest())
			}
			// A second apply is a no-op: same version, no error, one row per migration.
			if err := migrations.Apply(ctx, db, tc.set); err != nil {
				t.Fatalf("second apply: %v", err)
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			ms, _ := tc.set.List()
			if n != len(ms) {
				t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
			}
		})
	}
}

func TestRefuseNewer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	if err := migrations.Apply(ctx, db, migrations.Index); err != nil {
		t.Fatal(err)
	}
	// A newer ckpt records its version as this one does: a row and the
	// header's user_version.
	future := migrations.Index.Latest() + 1
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied) VALUES (?, 'from_the_future.sql', 0)`, future); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, future)); err != nil {
		t.Fatal(err)
	}
	err := migrations.Apply(ctx, db, migrations.Index)
	if !errors.Is(err, migrations.ErrTooNew) {
		t.Fatalf("apply on newer db: got %v, want ErrTooNew", err)
	}
	v, _ := migrations.Version(ctx, db)
	if v != future {
		t.Errorf("version changed to %d, want %d untouched", v, future)
	}
}

func TestListOrderedAndNamed(t *testing.T) {
	t.Parallel()
	for _, set := range []migrations.Set{migrations.Index, migrations.CAS} {
		ms, err := set.List()
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if m.Version != i+1 {
				t.Errorf("%s: migration %d has version %d; versions must be 1..n without gaps", set, i, m.Version)
			}
			if m.SQL == "" {
				t.Errorf("%s: %s is empty", set, m.Name)
			}
		}
	}
}

// TestConcurrentApply opens one file from several connections pools at once,
// as several ckpt processes do on first use.
func TestConcurrentApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "c.db")
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			// Through Open, as every store opens a database: switching the
			// new file to WAL fails at once with SQLITE_BUSY while another
			// connection holds it, which Open waits out (Apply alone
			// does not, and failed here now and then).
			db, err := migrations.Open(ctx, "file:"+p+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate",
				migrations.Index, func(context.Context, *sql.DB) error { return nil })
			if err != nil {
				errs <- err
				return
			}
			errs <- db.Close()
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Errorf("concurrent apply: %v", err)
		}
	}
}

func userVersion(t testing.TB, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUserVersion: every way of bringing a database up to date leaves the
// latest version in its header, where Apply looks first; a database
// migrated before the header was kept gets it on its next Apply.
func TestUserVersion(t *testing.T) {
	ctx := context.Background()
	for _, set := range []migrations.Set{migrations.Index, migrations.CAS, migrations.Catalog} {
		t.Run(set.String(), func(t *testing.T) {
			db := openDB(t)
			if err := migrations.Apply(ctx, db, set); err != nil {
				t.Fatal(err)
			}
			if got := userVersion(t, db); got != set.Latest() {
				t.Fatalf("user_version after a fresh apply = %d, want %d", got, set.Latest())
			}
			if _, err := db.Exec(`PRAGMA user_version = 0`); err != nil {
				t.Fatal(err)
			}
			if err := migrations.Apply(ctx, db, set); err != nil {
				t.Fatal(err)
			}
			if got := userVersion(t, db); got != set.Latest() {
				t.Errorf("user_version after apply on an unmarked current db = %d, want %d", got, set.Latest())
			}
			if v, err := migrations.Version(ctx, db); err != nil || v != set.Latest() {
				t.Errorf("version = %d, %v; want %d", v, err, set.Latest())
			}
		})
	}
	t.Run("one by one", func(t *testing.T) {
		old := migrations.SetUseBase(false)
		defer migrations.SetUseBase(old)
		db := openDB(t)
		if err := migrations.Apply(ctx, db, migrations.Index); err != nil {
			t.Fatal(err)
		}
		if got := userVersion(t, db); got != migrations.Index.Latest() {
			t.Errorf("user_version after migrating one by one = %d, want %d", got, migrations.Index.Latest())
		}
	})
}
