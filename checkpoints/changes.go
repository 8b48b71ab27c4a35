package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
)

// ChangeKind says what a Change recorded.
type ChangeKind string

// The kinds of the change log (migration 0006).
const (
	ChangeTurnOpened ChangeKind = "turn_opened"
	ChangeCaptured   ChangeKind = "captured"
	ChangeMessage    ChangeKind = "message"
	ChangeOp         ChangeKind = "op" // a rewind, undo, redo or summarize finished
	ChangePinned     ChangeKind = "pinned"
	ChangeStepOpened ChangeKind = "step_opened" // a tool call opened a step (migration 0007)
	// ChangeTrimmed stands where the log was trimmed: the changes before
	// it, and the one it replaced, are gone, so a follower that had not
	// read up to its ID has missed changes and must read the whole state
	// again. It is the oldest row of a trimmed log.
	ChangeTrimmed ChangeKind = "trimmed"
)

// DefaultChangeLogKeep is how many of the newest changes the change log
// keeps when it is trimmed (WithChangeLogKeep); it holds up to a quarter
// more between trims. A follower polls the log
// every fraction of a second, so only one stopped for a long time while
// the session changed thousands of times falls behind it.
const DefaultChangeLogKeep = 4096

// WithChangeLogKeep sets how many of the newest changes the change log
// keeps when it is trimmed; n < 1 keeps one.
func WithChangeLogKeep(n int) Option {
	return func(x *Index) { x.keep = int64(max(n, 1)) }
}

// Change is one committed change to the session, from its change log.
type Change struct {
	ID   int64 // position in the log: increasing in commit order
	Kind ChangeKind
	Turn int    // the turn it concerns (for ChangeOp the op's target turn)
	Path string // for ChangeCaptured
	// For ChangeOp: the finished op's kind and action, whether it is a
	// revert, and the kind of the op it reverses (an undo reversing an
	// undo is a redo).
	Op         OpKind
	Action     Action
	Revert     bool
	UndoesKind OpKind
}

// LastChange returns the ID of the latest change (0 when there is none):
// the position to follow the log from.
func (x *Index) LastChange(ctx context.Context) (int64, error) {
	var id int64
	if err := x.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM changes`).Scan(&id); err != nil {
		return 0, fmt.Errorf("checkpoints: last change: %w", err)
	}
	return id, nil
}

// ChangesAfter returns up to limit changes committed after the one with ID
// after, oldest first. One indexed query: cheap to poll.
func (x *Index) ChangesAfter(ctx context.Context, after int64, limit int) ([]Change, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT c.id, c.kind, c.turn, c.path,
			COALESCE(o.kind, ''), COALESCE(o.action, ''), COALESCE(o.revert, 0), COALESCE(u.kind, '')
		FROM changes c LEFT JOIN ops o ON o.id = c.op_id LEFT JOIN ops u ON u.id = o.undoes
		WHERE c.id > ? ORDER BY c.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: changes: %w", err)
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var c Change
		var revert sql.NullBool
		if err := rows.Scan(&c.ID, &c.Kind, &c.Turn, &c.Path, &c.Op, &c.Action, &revert, &c.UndoesKind); err != nil {
			return nil, fmt.Errorf("checkpoints: changes: %w", err)
		}
		c.Revert = revert.Bool
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checkpoints: changes: %w", err)
	}
	return out, nil
}

// changesSpan reads the change log's lowest and highest ids in tx (both
// invalid when it is empty), for trimChanges.
func changesSpan(ctx context.Context, tx *sql.Tx) (lo, hi sql.NullInt64, err error) {
	err = tx.QueryRowContext(ctx, `SELECT (SELECT min(id) FROM changes), (SELECT max(id) FROM changes)`).Scan(&lo, &hi)
	return lo, hi, err
}

// trimChanges bounds the change log to about the newest x.keep changes,
// in tx, given its lowest and highest ids as they stand now (lo, hi:
// changesSpan). The change log gains a row per capture, message and turn,
// and nothing reads old rows but a follower that fell behind, so without a
// bound it would grow for as long as the session lives. It runs in the
// write transactions that open turns and steps, never in a capture's, and
// only acts once a quarter of x.keep more rows have come (two lookups of
// the primary key until then), so a turn deletes a batch now and then
// rather than a few rows every time. The newest row that falls out of the
// bound is kept as a ChangeTrimmed marker and those before it are deleted:
// a follower still behind the marker reads it first and knows it has
// missed changes, whatever gaps the IDs have.
func (x *Index) trimChanges(ctx context.Context, tx *sql.Tx, lo, hi sql.NullInt64) error {
	if !hi.Valid || hi.Int64-lo.Int64 < x.keep+max(x.keep/4, 1) {
		return nil
	}
	var mark int64
	if err := tx.QueryRowContext(ctx, `SELECT max(id) FROM changes WHERE id <= ?`, hi.Int64-x.keep).Scan(&mark); err != nil {
		return fmt.Errorf("trim changes: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE id < ?`, mark); err != nil {
		return fmt.Errorf("trim changes: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE changes SET kind = ?, turn = 0, path = '', op_id = NULL
		WHERE id = ? AND kind <> ?`, ChangeTrimmed, mark, ChangeTrimmed); err != nil {
		return fmt.Errorf("trim changes: %w", err)
	}
	return nil
}
