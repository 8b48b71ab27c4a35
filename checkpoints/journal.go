package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The op journal read as a history. Every op (rewind, summarize, undo, and
// an undo of an undo, which is a redo) keeps the before and after state of
// each path it rewrote (op_files) and, since migration 0005, the turns and
// messages whose visibility it changed (op_conv). An undo of op X puts X's
// before states back, files and conversation alike; so the state before any
// op is restored by undoing it, and the state an undo replaced by undoing
// that undo.

// Visibility is one turn or message whose visibility an op changed.
type Visibility struct {
	Message     bool  // a message; otherwise a turn
	ID          int64 // turns.id or messages.id
	ShownBefore bool  // shown just before the op (a message the op added was not)
}

// Entry is one op of the journal with its conversation changes.
type Entry struct {
	Op
	// Recorded is false for ops finished before the index kept their
	// conversation changes (and for planned ops): Changes is then empty
	// whatever the op did.
	Recorded bool
	Changes  []Visibility
}

// TurnRow is one turn, active or hidden.
type TurnRow struct {
	ID     int64
	Seq    int64
	Number int
	Prompt string
	Shown  bool // in the active history
}

// ConvState is the visibility of the whole conversation at one moment.
type ConvState struct {
	Turns          []TurnRow      // every turn, by id
	HiddenMessages map[int64]bool // messages hidden by an op (summarize)
}

// Journal returns every op, oldest first, with its recorded conversation
// changes and, when files is true, its files (Entry reads one op's). It
// reads one consistent snapshot.
func (x *Index) Journal(ctx context.Context, files bool) ([]Entry, error) {
	var out []Entry
	err := x.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM ops ORDER BY id`)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, id := range ids {
			e, err := entry(ctx, tx, id, files)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: journal: %w", err)
	}
	return out, nil
}

// Entry returns one op of the journal with its files and conversation
// changes, or an error wrapping ErrNotFound.
func (x *Index) Entry(ctx context.Context, id int64) (Entry, error) {
	var e Entry
	err := x.read(ctx, func(tx *sql.Tx) error {
		var err error
		e, err = entry(ctx, tx, id, true)
		return err
	})
	if err != nil {
		return Entry{}, fmt.Errorf("checkpoints: op %d: %w", id, err)
	}
	return e, nil
}

func entry(ctx context.Context, tx *sql.Tx, id int64, files bool) (Entry, error) {
	var e Entry
	var err error
	if files {
		e.Op, err = getOp(ctx, tx, id)
		if err != nil {
			return Entry{}, err
		}
	}
	var undoes sql.NullInt64
	var t int64
	err = tx.QueryRowContext(ctx, `SELECT id, seq, kind, turn, scope, state, undoes, prompt, time, action, revert, conv_recorded, step
		FROM ops WHERE id = ?`, id).Scan(&e.ID, &e.Seq, &e.Kind, &e.Turn, &e.Scope, &e.State, &undoes, &e.Prompt, &t, &e.Action, &e.Revert, &e.Recorded, &e.Step)
	if err != nil {
		return Entry{}, notFound(err)
	}
	e.Undoes, e.Time = undoes.Int64, time.Unix(0, t)
	e.Changes, err = convChanges(ctx, tx, id)
	return e, err
}

func convChanges(ctx context.Context, tx *sql.Tx, id int64) ([]Visibility, error) {
	rows, err := tx.QueryContext(ctx, `SELECT what = 'message', row_id, shown_before FROM op_conv WHERE op_id = ? ORDER BY what DESC, row_id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Visibility
	for rows.Next() {
		var v Visibility
		if err := rows.Scan(&v.Message, &v.ID, &v.ShownBefore); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ConvState returns which turns are in the active history and which
// messages are hidden, now.
func (x *Index) ConvState(ctx context.Context) (ConvState, error) {
	var st ConvState
	err := x.read(ctx, func(tx *sql.Tx) error {
		var err error
		st, err = convState(ctx, tx)
		return err
	})
	if err != nil {
		return ConvState{}, fmt.Errorf("checkpoints: conversation state: %w", err)
	}
	return st, nil
}

func convState(ctx context.Context, tx *sql.Tx) (ConvState, error) {
	st := ConvState{HiddenMessages: map[int64]bool{}}
	rows, err := tx.QueryContext(ctx, `SELECT id, seq, number, prompt, hidden_by IS NULL FROM turns ORDER BY id`)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var t TurnRow
		if err := rows.Scan(&t.ID, &t.Seq, &t.Number, &t.Prompt, &t.Shown); err != nil {
			rows.Close()
			return st, err
		}
		st.Turns = append(st.Turns, t)
	}
	if err := rows.Close(); err != nil {
		return st, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT id FROM messages WHERE hidden_by IS NOT NULL`)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return st, err
		}
		st.HiddenMessages[id] = true
	}
	return st, rows.Err()
}

// convMark is what FinishOp notes before it applies an op's conversation
// change, so recordConv can tell what the op changed.
type convMark struct {
	hiddenTurns map[int64]bool
	hiddenMsgs  map[int64]bool
	lastMsg     int64
}

func markConv(ctx context.Context, tx *sql.Tx) (convMark, error) {
	m := convMark{hiddenTurns: map[int64]bool{}}
	st, err := convState(ctx, tx)
	if err != nil {
		return m, err
	}
	for _, t := range st.Turns {
		if !t.Shown {
			m.hiddenTurns[t.ID] = true
		}
	}
	m.hiddenMsgs = st.HiddenMessages
	err = tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM messages`).Scan(&m.lastMsg)
	return m, err
}

// recordConv writes the conversation rows op id changed since mark was
// taken, and marks the op recorded.
func recordConv(ctx context.Context, tx *sql.Tx, id int64, mark convMark) error {
	now, err := markConv(ctx, tx)
	if err != nil {
		return err
	}
	ins := func(what string, row int64, shownBefore bool) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO op_conv (op_id, what, row_id, shown_before) VALUES (?, ?, ?, ?)`, id, what, row, shownBefore)
		return err
	}
	for _, pair := range []struct {
		what          string
		before, after map[int64]bool
	}{{"turn", mark.hiddenTurns, now.hiddenTurns}, {"message", mark.hiddenMsgs, now.hiddenMsgs}} {
		for row := range pair.after {
			if !pair.before[row] {
				if err := ins(pair.what, row, true); err != nil {
					return err
				}
			}
		}
		for row := range pair.before {
			if !pair.after[row] {
				if err := ins(pair.what, row, false); err != nil {
					return err
				}
			}
		}
	}
	// Messages the op added and left shown (a summary) were not there before.
	rows, err := tx.QueryContext(ctx, `SELECT id FROM messages WHERE id > ? AND hidden_by IS NULL`, mark.lastMsg)
	if err != nil {
		return err
	}
	var added []int64
	for rows.Next() {
		var m int64
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return err
		}
		added = append(added, m)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, m := range added {
		if err := ins("message", m, false); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE ops SET conv_recorded = 1 WHERE id = ?`, id)
	return err
}

// reverseConv applies undo op u's conversation change when the op it
// undoes has a recorded one, and reports whether it did. Rows the undone
// op hid are shown again (whatever hides them now) and rows it showed or
// added are hidden, by u; when the undone op changed turns, the turns
// opened since it are hidden too (they did not exist before it; undoing u
// shows them again). Hiding comes first, so a turn number is never active
// twice; the controller checks beforehand that showing cannot clash.
func reverseConv(ctx context.Context, tx *sql.Tx, u Op) (bool, error) {
	var recorded bool
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT conv_recorded, seq FROM ops WHERE id = ?`, u.Undoes).Scan(&recorded, &seq)
	if err != nil || !recorded {
		return false, notFound(err)
	}
	changes, err := convChanges(ctx, tx, u.Undoes)
	if err != nil {
		return false, err
	}
	table := func(v Visibility) string {
		if v.Message {
			return "messages"
		}
		return "turns"
	}
	turns := false
	for _, v := range changes {
		turns = turns || !v.Message
		if !v.ShownBefore {
			if _, err := tx.ExecContext(ctx, `UPDATE `+table(v)+` SET hidden_by = ? WHERE id = ? AND hidden_by IS NULL`, u.ID, v.ID); err != nil {
				return false, err
			}
		}
	}
	if turns {
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET hidden_by = ? WHERE hidden_by IS NULL AND seq > ?`, u.ID, seq); err != nil {
			return false, err
		}
	}
	for _, v := range changes {
		if v.ShownBefore {
			if _, err := tx.ExecContext(ctx, `UPDATE `+table(v)+` SET hidden_by = NULL WHERE id = ?`, v.ID); err != nil {
				return false, err
			}
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE ops SET state = 'undone' WHERE id = ?`, u.Undoes)
	return true, err
}
