package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Page selects part of the active turns for CheckpointsPage.
type Page struct {
	// Since, when at least 0, starts the page at the first active turn
	// numbered Since or later; Limit then counts forward from it.
	// Negative means no lower bound, and Limit counts back from the
	// newest turn.
	Since int
	// Limit is the most turns returned; 0 or less means all.
	Limit int
}

// PageInfo describes the active history a page was cut from.
type PageInfo struct {
	Total int // active turns
	Last  int // the newest active turn's number; -1 when there is none
}

// CheckpointsPage is Checkpoints for one page of the active turns, oldest
// first, each with its snapshots sorted by path. It reads only the page's
// rows (through the active-number index), so the newest 50 of 50,000 turns
// cost what 50 do.
func (x *Index) CheckpointsPage(ctx context.Context, p Page) ([]Checkpoint, PageInfo, error) {
	var out []Checkpoint
	info := PageInfo{Last: -1}
	err := x.read(ctx, func(tx *sql.Tx) error {
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT count(*), max(number) FROM turns WHERE hidden_by IS NULL`).Scan(&info.Total, &last); err != nil {
			return err
		}
		if last.Valid {
			info.Last = int(last.Int64)
		}
		limit := int64(p.Limit)
		if limit <= 0 {
			limit = -1 // SQLite: no limit
		}
		const cols = `SELECT id, seq, number, prompt, time, pinned, label, pruned, manifest_id IS NOT NULL AS scanned FROM turns`
		var rows *sql.Rows
		var err error
		if p.Since >= 0 {
			rows, err = tx.QueryContext(ctx, cols+` WHERE hidden_by IS NULL AND number >= ? ORDER BY number LIMIT ?`, p.Since, limit)
		} else {
			rows, err = tx.QueryContext(ctx, cols+` WHERE hidden_by IS NULL ORDER BY number DESC LIMIT ?`, limit)
		}
		if err != nil {
			return err
		}
		for rows.Next() {
			cp, err := scanTurn(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, cp)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(out) == 0 {
			return nil
		}
		if p.Since < 0 {
			slices.Reverse(out)
		}
		byID := make(map[int64]int, len(out))
		for i, cp := range out {
			byID[cp.ID] = i
		}
		rows, err = tx.QueryContext(ctx, `SELECT `+snapCols+`, s.turn_id FROM turns t JOIN named_snaps s ON s.turn_id = t.id
			WHERE t.hidden_by IS NULL AND t.number BETWEEN ? AND ?`, out[0].Turn, out[len(out)-1].Turn)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var turnID int64
			f, err := scanSnap(rows, &turnID)
			if err != nil {
				return err
			}
			if i, ok := byID[turnID]; ok {
				out[i].Files = append(out[i].Files, f)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, PageInfo{}, fmt.Errorf("checkpoints: list: %w", err)
	}
	for i := range out {
		sortByPath(out[i].Files)
	}
	return out, info, nil
}
