package checkpoints

import (
	"context"
	"fmt"
	"testing"
)

// TestManifestDamagedRowsAreAnError damages a stored manifest's rows the
// way a corrupt index page does, which SQLite reads without complaint (a
// row gone, a field changed, a row added) and checks that reading the
// manifest fails instead of returning other content: a rewind takes a
// path missing from a scanned turn's manifest as absent then and deletes
// it, so a lost row must never read as a file that was not there. Both a
// whole manifest and one stored as a delta are damaged.
func TestManifestDamagedRowsAreAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	entries := func(n int, tag string) []ManifestEntry {
		var out []ManifestEntry
		for i := range n {
			p := fmt.Sprintf("dir/f%03d", i)
			out = append(out, ManifestEntry{Path: p, Blob: sum(p + tag), Mode: 0o644, Size: int64(i)})
		}
		return out
	}
	damages := []struct {
		name, sql string
	}{
		{"a row gone", `DELETE FROM manifest_files WHERE manifest_id = ?1 AND path = 'dir/f005'`},
		{"a blob changed", `UPDATE manifest_files SET blob = zeroblob(32) WHERE manifest_id = ?1 AND path = 'dir/f005'`},
		{"a size changed", `UPDATE manifest_files SET size = 999 WHERE manifest_id = ?1 AND path = 'dir/f005'`},
		{"a row added", `INSERT INTO manifest_files (manifest_id, path, blob, mode, size) VALUES (?1, 'dir/zzz', zeroblob(32), 420, 1)`},
		{"a skip gone", `DELETE FROM manifest_skips WHERE manifest_id = ?1`},
	}
	for _, delta := range []bool{false, true} {
		for _, d := range damages {
			t.Run(fmt.Sprintf("%s, delta %v", d.name, delta), func(t *testing.T) {
				x, err := Open(ctx, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				skips := []ScanSkip{{Path: "big", Reason: "too big"}}
				t0, err := x.BeginTurn(ctx, "t0", nil, &Manifest{Files: entries(40, ""), Skips: skips})
				if err != nil {
					t.Fatal(err)
				}
				turn := t0
				if delta {
					// One entry changed: stored as a delta against t0's.
					files := entries(40, "")
					files[5] = ManifestEntry{Path: "dir/f005", Blob: sum("changed"), Mode: 0o644, Size: 5}
					if turn, err = x.BeginTurn(ctx, "t1", nil, &Manifest{Files: files, Skips: skips}); err != nil {
						t.Fatal(err)
					}
				}
				var mid int64
				var base *int64
				if err := x.db.QueryRow(`SELECT t.manifest_id, m.base FROM turns t JOIN manifests m ON m.id = t.manifest_id WHERE t.id = ?`, turn.ID).Scan(&mid, &base); err != nil {
					t.Fatal(err)
				}
				if delta != (base != nil) {
					t.Fatalf("manifest stored with base %v, want a delta: %v", base, delta)
				}
				if _, err := x.Manifest(ctx, turn.ID); err != nil {
					t.Fatalf("before the damage: %v", err)
				}
				if _, err := x.db.Exec(d.sql, mid); err != nil {
					t.Fatal(err)
				}
				if m, err := x.Manifest(ctx, turn.ID); err == nil {
					t.Errorf("Manifest read a damaged manifest without error: %d files, %d skips", len(m.Files), len(m.Skips))
				}
				if m, err := x.ManifestByID(ctx, mid); err == nil {
					t.Errorf("ManifestByID read a damaged manifest without error: %d files, %d skips", len(m.Files), len(m.Skips))
				}
			})
		}
	}
}
