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
)

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
