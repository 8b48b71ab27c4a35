package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
)

// EachCheckpoint calls fn with every active turn numbered since or later,
// oldest first, each with its snapshots sorted by path, as Checkpoints
// returns them, and whether it is the open turn (the newest), but one at a
// time: a list of 50,000 turns is never whole in
// memory. It reads one consistent snapshot of the index, held until the
// last call returns; an error from fn stops the walk and is returned as is.
// The PageInfo describes the whole active history, as CheckpointsPage's
// does (with since 0 or less, Total is the count of turns passed to fn).
func (x *Index) EachCheckpoint(ctx context.Context, since int, fn func(cp Checkpoint, open bool) error) (PageInfo, error) {
	info := PageInfo{Last: -1}
	var fnErr error
	err := x.read(ctx, func(tx *sql.Tx) error {
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT max(number) FROM turns WHERE hidden_by IS NULL`).Scan(&last); err != nil {
			return err
		}
		if !last.Valid {
			return nil
		}
		info.Last = int(last.Int64)
		counted := since <= 0
		if !counted {
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE hidden_by IS NULL`).Scan(&info.Total); err != nil {
				return err
			}
		}
		// The snapshots first: far fewer rows than turns, and read in the
		// table's own order (CROSS JOIN keeps snaps the outer loop), where
		// number order would search snaps once per turn; each turn's are
		// put in path order as it is sent.
		files := map[int64][]FileSnap{}
		rows, err := tx.QueryContext(ctx, `SELECT `+snapCols+`, s.turn_id FROM named_snaps s CROSS JOIN turns t ON t.id = s.turn_id
			WHERE t.hidden_by IS NULL AND t.number >= ?`, since)
		if err != nil {
			return err
		}
		for rows.Next() {
			var turnID int64
			f, err := scanSnap(rows, &turnID)
			if err != nil {
				rows.Close()
				return err
			}
			files[turnID] = append(files[turnID], f)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT id, seq, number, prompt, time, pinned, label, pruned, manifest_id IS NOT NULL AS scanned
			FROM turns WHERE hidden_by IS NULL AND number >= ? ORDER BY number`, since)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			cp, err := scanTurn(rows)
			if err != nil {
				return err
			}
			cp.Files = files[cp.ID]
			sortByPath(cp.Files)
			delete(files, cp.ID)
			if counted {
				info.Total++
			}
			if err := fn(cp, cp.Turn == info.Last); err != nil {
				fnErr = err
				return err
			}
		}
		return rows.Err()
	})
	if fnErr != nil {
		return info, fnErr
	}
	if err != nil {
		return info, fmt.Errorf("checkpoints: list: %w", err)
	}
	return info, nil
}
