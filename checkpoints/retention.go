package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/migrations"
)

// Pin marks the active turn numbered n as exempt from retention (pinned
// true) or removes the mark. A non-empty label replaces the turn's label;
// an empty one keeps it.
func (x *Index) Pin(ctx context.Context, n int, pinned bool, label string) error {
	err := x.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE turns SET pinned = ?, label = CASE WHEN ? = '' THEN label ELSE ? END WHERE hidden_by IS NULL AND number = ?`, pinned, label, label, n)
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoints: (un)pin turn %d: %w", n, err)
	}
	return nil
}

// TurnRecord is what retention needs to know of a turn, hidden or not.
type TurnRecord struct {
	ID     int64
	Seq    int64
	Number int
	Hidden bool
	Pinned bool
	Pruned bool
	Time   time.Time
	Blobs  []cas.ID // referenced by the turn's snapshots (start and end states)
}

// TurnRecords returns every turn of the session, hidden ones included, in
// the order they were opened, with the blobs their snapshots reference.
func (x *Index) TurnRecords(ctx context.Context) ([]TurnRecord, error) {
	var out []TurnRecord
	err := x.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, seq, number, hidden_by IS NOT NULL, pinned, pruned, time FROM turns ORDER BY seq`)
		if err != nil {
			return err
		}
		byID := map[int64]int{}
		for rows.Next() {
			var r TurnRecord
			var t int64
			if err := rows.Scan(&r.ID, &r.Seq, &r.Number, &r.Hidden, &r.Pinned, &r.Pruned, &t); err != nil {
				rows.Close()
				return err
			}
			r.Time = time.Unix(0, t)
			byID[r.ID] = len(out)
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		// A scanned turn references every row of its manifest's chain (a
		// delta keeps its bases, and their blobs, alive).
		rows, err = tx.QueryContext(ctx, fmt.Sprintf(manifestChainSQL, `SELECT id, manifest_id, 0 FROM turns WHERE manifest_id IS NOT NULL`)+`
			SELECT turn_id, blob FROM snaps WHERE blob IS NOT NULL
			UNION ALL SELECT turn_id, end_blob FROM snaps WHERE end_blob IS NOT NULL
			UNION ALL SELECT turn_id, blob FROM step_snaps WHERE blob IS NOT NULL
			UNION ALL SELECT c.top, f.blob FROM chain c JOIN manifest_files f ON f.manifest_id = c.mid WHERE f.gone = 0`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var b []byte
			if err := rows.Scan(&id, &b); err != nil {
				return err
			}
			blob, err := scanBlob(b)
			if err != nil {
				return err
			}
			if i, ok := byID[id]; ok {
				out[i].Blobs = append(out[i].Blobs, *blob)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: turn records: %w", err)
	}
	return out, nil
}

// Prune drops the file snapshots of the given turns and marks them pruned:
// their conversation stays, but they can no longer be rewound in code.
// Retention prunes only a prefix of the session (by seq), so rewinds to
// the turns that remain still find every state they need.
func (x *Index) Prune(ctx context.Context, turnIDs []int64) error {
	err := x.write(ctx, func(tx *sql.Tx) error {
		for _, id := range turnIDs {
			if _, err := tx.ExecContext(ctx, `DELETE FROM snaps WHERE turn_id = ?`, id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM step_snaps WHERE turn_id = ?`, id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE turns SET pruned = 1, manifest_id = NULL WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return dropUnusedManifests(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("checkpoints: prune: %w", err)
	}
	return nil
}

// RefKind says where a blob reference lives.
type RefKind string

// The reference kinds.
const (
	RefSnap     RefKind = "snapshot" // a turn's start state
	RefEnd      RefKind = "end"      // a turn's end state (for conflict checks)
	RefUndo     RefKind = "undo"     // an op's before or after state
	RefManifest RefKind = "manifest" // a scanned turn's manifest entry
	RefCache    RefKind = "cache"    // the stat cache (live, so a cache hit never names a swept blob)
)

// Ref is one reference from the index to a blob.
type Ref struct {
	Blob cas.ID
	Kind RefKind
	Turn int    // turn number (for an undo record, the op's target turn)
	Path string // workspace-relative
	Lost bool   // already marked lost by a repair
}

// Refs calls fn for every blob reference in the index: snapshots, end
// states and undo records. It reads one consistent snapshot.
func (x *Index) Refs(ctx context.Context, fn func(Ref) error) error {
	err := x.read(ctx, func(tx *sql.Tx) error {
		// A manifest's rows are referenced by the first turn whose
		// manifest is it or a delta built on it.
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(manifestChainSQL, `SELECT number, manifest_id, 0 FROM turns WHERE manifest_id IS NOT NULL`)+`
			SELECT s.blob, 'snapshot', t.number, s.path, s.lost FROM named_snaps s JOIN turns t ON t.id = s.turn_id WHERE s.blob IS NOT NULL
			UNION ALL SELECT s.end_blob, 'end', t.number, s.path, 0 FROM named_snaps s JOIN turns t ON t.id = s.turn_id WHERE s.end_blob IS NOT NULL
			UNION ALL SELECT s.blob, 'snapshot', t.number, s.path, s.lost FROM step_snaps s JOIN turns t ON t.id = s.turn_id WHERE s.blob IS NOT NULL
			UNION ALL SELECT f.before_blob, 'undo', o.turn, f.path, f.lost FROM op_files f JOIN ops o ON o.id = f.op_id WHERE f.before_blob IS NOT NULL
			UNION ALL SELECT f.after_blob, 'undo', o.turn, f.path, 0 FROM op_files f JOIN ops o ON o.id = f.op_id WHERE f.after_blob IS NOT NULL
			UNION ALL SELECT m.blob, 'manifest', u.n, m.path, m.lost FROM manifest_files m JOIN (
				SELECT mid, min(top) AS n FROM chain GROUP BY mid) u
				ON u.mid = m.manifest_id WHERE m.gone = 0`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r Ref
			var b []byte
			if err := rows.Scan(&b, &r.Kind, &r.Turn, &r.Path, &r.Lost); err != nil {
				return err
			}
			id, err := scanBlob(b)
			if err != nil {
				return err
			}
			r.Blob = *id
			if err := fn(r); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		cache, err := statCache(ctx, tx)
		if err != nil {
			return err
		}
		for _, e := range cache {
			if err := fn(Ref{Blob: e.Blob, Kind: RefCache, Turn: -1, Path: e.Path}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoints: refs: %w", err)
	}
	return nil
}

// MarkLost records that the given blobs cannot be read: every snapshot and
// undo state holding one is marked lost, and end states holding one are
// forgotten (they only serve comparisons). It returns how many references
// changed.
func (x *Index) MarkLost(ctx context.Context, blobs []cas.ID) (int, error) {
	n := 0
	err := x.write(ctx, func(tx *sql.Tx) error {
		for _, id := range blobs {
			for _, q := range []string{
				`UPDATE snaps SET lost = 1 WHERE blob = ? AND lost = 0`,
				`UPDATE step_snaps SET lost = 1 WHERE blob = ? AND lost = 0`,
				`UPDATE snaps SET end_state = 0, end_blob = NULL WHERE end_blob = ?`,
				`UPDATE op_files SET lost = 1 WHERE before_blob = ? AND lost = 0`,
				`UPDATE manifest_files SET lost = 1 WHERE blob = ? AND lost = 0`,
			} {
				res, err := tx.ExecContext(ctx, q, id[:])
				if err != nil {
					return err
				}
				k, _ := res.RowsAffected()
				n += int(k)
			}
		}
		// The stat cache is advisory: drop it rather than let it vouch for
		// a lost blob.
		_, err := tx.ExecContext(ctx, `DELETE FROM statcache`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoints: mark lost: %w", err)
	}
	return n, nil
}

// LastUse returns when the session last opened a turn, rewound or undid,
// or the zero time for an empty session.
func (x *Index) LastUse(ctx context.Context) (time.Time, error) {
	var t sql.NullInt64
	err := x.db.QueryRowContext(ctx, `SELECT max(t) FROM (SELECT max(time) AS t FROM turns UNION ALL SELECT max(time) FROM ops
		UNION ALL SELECT max(time) FROM messages)`).Scan(&t)
	if err != nil {
		return time.Time{}, fmt.Errorf("checkpoints: last use: %w", err)
	}
	if !t.Valid {
		return time.Time{}, nil
	}
	return time.Unix(0, t.Int64), nil
}

// Compact gives the pages of deleted rows back to the file system and
// truncates the WAL (migrations.Vacuum: time proportional to the pages
// freed). An index created before ckpt used incremental auto-vacuum is
// converted first by one VACUUM (an index is small: it holds ids, not
// content). Retention calls it after pruning, so the bytes a session's
// index takes on disk shrink with it. It is safe while other processes
// use the session.
func (x *Index) Compact(ctx context.Context) error {
	err := func() error {
		conn, err := x.db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		return migrations.Vacuum(ctx, conn)
	}()
	if err != nil {
		return fmt.Errorf("checkpoints: compact %s: %w", x.dir, err)
	}
	return nil
}
