package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Earliest returns, for every path with an event after seq (a capture in
// any turn opened since, hidden or not, a path rewritten by a finished
// rewind or undo, or a manifest entry of a turn opened at or after seq),
// the state before its first such event: the path's state at clock value
// seq. A manifest is taken as the turn opens, before any capture in it.
// Paths without an event are absent from the map.
func (x *Index) Earliest(ctx context.Context, seq int64) (map[string]State, error) {
	ev, err := x.EarliestEvents(ctx, seq)
	if err != nil {
		return nil, err
	}
	out := make(map[string]State, len(ev))
	for p, e := range ev {
		out[p] = e.State
	}
	return out, nil
}

// Event is a path's recorded state at clock value Seq.
type Event struct {
	State State
	Seq   int64
}

// EarliestEvents is Earliest with each state's clock value: a caller that
// knows of an earlier event (a scanned turn whose manifest proves the path
// absent) can tell which comes first.
func (x *Index) EarliestEvents(ctx context.Context, seq int64) (map[string]Event, error) {
	out := map[string]Event{}
	err := x.read(ctx, func(tx *sql.Tx) error {
		// SQLite fills the bare columns from the row holding min(seq).
		// The manifests' entries: chain starts at each scanned turn's seq.
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(manifestChainSQL, `SELECT seq, manifest_id, 0 FROM turns WHERE manifest_id IS NOT NULL AND seq >= ?1`)+`
			SELECT path, blob, mode, size, dirs, lost, min(seq) FROM (
			SELECT path, seq, blob, mode, size, dirs, lost FROM named_snaps WHERE seq > ?1
			UNION ALL
			SELECT path, seq, blob, mode, size, dirs, lost FROM step_snaps WHERE seq > ?1
			UNION ALL
			SELECT path, top, blob, mode, size, '', lost FROM (`+resolvedRowsSQL+`) WHERE gone = 0
			UNION ALL
			SELECT f.path, f.seq, f.before_blob, f.before_mode, f.before_size, f.before_dirs, f.lost
			FROM op_files f JOIN ops o ON o.id = f.op_id
			WHERE f.seq > ?1 AND o.state != 'planned'
		) GROUP BY path`, seq)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var path string
			var blob []byte
			var mode uint32
			var size, min int64
			var dirs string
			var lost bool
			if err := rows.Scan(&path, &blob, &mode, &size, &dirs, &lost, &min); err != nil {
				return err
			}
			id, err := scanBlob(blob)
			if err != nil {
				return err
			}
			out[path] = Event{State: State{Content: id, Mode: fs.FileMode(mode), Size: size, Dirs: splitDirs(dirs), Lost: lost}, Seq: min}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: earliest since %d: %w", seq, err)
	}
	return out, nil
}

// PlanOp records op in state "planned" with all its files, before any file
// is touched, and returns it with ID, Seq and Time set. Every file gets its
// own clock value, after the op's.
func (x *Index) PlanOp(ctx context.Context, op Op) (Op, error) {
	return x.PlanOpAfter(ctx, op, nil)
}

// PlanOpAfter is PlanOp whose transaction commits only once ready (when
// not nil) returns nil: ready waits for the blobs the op's before-states
// name to be durable, while the rows are inserted. When ready fails
// nothing is recorded and its error is returned. ready runs holding the
// index's write lock: it must not wait for this index.
func (x *Index) PlanOpAfter(ctx context.Context, op Op, ready func() error) (Op, error) {
	now := x.now()
	err := x.writeDurable(ctx, func(tx *sql.Tx) error {
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM ops WHERE state = 'planned'`).Scan(&pending); err != nil {
			return err
		}
		if pending > 0 {
			return fmt.Errorf("another rewind or undo is unfinished")
		}
		seq, err := tick(ctx, tx)
		if err != nil {
			return err
		}
		var undoes any
		if op.Undoes != 0 {
			undoes = op.Undoes
		}
		if op.Action == "" {
			op.Action = ActionRewind
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO ops (seq, kind, turn, scope, state, undoes, prompt, time, action, revert, step)
			VALUES (?, ?, ?, ?, 'planned', ?, ?, ?, ?, ?, ?)`, seq, op.Kind, op.Turn, op.Scope, undoes, op.Prompt, now.UnixNano(), op.Action, op.Revert, op.Step)
		if err != nil {
			return err
		}
		if op.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		op.Seq, op.State, op.Time = seq, "planned", time.Unix(0, now.UnixNano())
		st, err := tx.PrepareContext(ctx, `INSERT INTO op_files (op_id, path, seq, before_blob, before_mode, before_size,
			after_blob, after_mode, after_size, before_dirs, after_dirs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		// The files' clock values, seq+1..seq+n, taken with one update.
		if len(op.Files) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = value + ? WHERE key = 'clock'`, len(op.Files)); err != nil {
				return err
			}
		}
		for i, f := range op.Files {
			fseq := seq + 1 + int64(i)
			if _, err := st.ExecContext(ctx, op.ID, f.Path, fseq,
				blobArg(f.Before.Content), uint32(f.Before.Mode), f.Before.Size,
				blobArg(f.After.Content), uint32(f.After.Mode), f.After.Size,
				joinDirs(f.Before.Dirs), joinDirs(f.After.Dirs)); err != nil {
				return err
			}
		}
		if ready != nil {
			return ready()
		}
		return nil
	})
	if err != nil {
		return Op{}, fmt.Errorf("checkpoints: plan %s: %w", op.Kind, err)
	}
	return op, nil
}

// Done is what FinishOp learns from the controller once the files are in
// place.
type Done struct {
	// Skipped paths were left alone; their op_files rows are dropped so they
	// are neither history nor undone later.
	Skipped []string
}

// FinishOp marks a planned op done and, in the same transaction, applies
// its conversation change: a rewind with a conversation scope hides the
// active turns numbered Turn and above; a summarize hides messages and adds
// its summary (see Op.Action); an undo marks its rewind undone, hides the
// turns opened since that rewind and unhides the ones it hid (for a
// summarize: unhides the messages it hid and hides its summary). The
// conversation rows every op changes are recorded (op_conv); an undo of an
// op with such a record puts exactly those rows back instead, which is what
// makes an undo of an undo (a redo) exact (see Journal).
func (x *Index) FinishOp(ctx context.Context, id int64, d Done) error {
	err := x.writeDurable(ctx, func(tx *sql.Tx) error {
		op, err := getOp(ctx, tx, id)
		if err != nil {
			return err
		}
		if op.State != "planned" {
			return fmt.Errorf("op %d is %s, not planned", id, op.State)
		}
		for _, p := range d.Skipped {
			if _, err := tx.ExecContext(ctx, `DELETE FROM op_files WHERE op_id = ? AND path = ?`, id, p); err != nil {
				return err
			}
		}
		mark, err := markConv(ctx, tx) // what the op changes in the conversation is recorded (journal.go)
		if err != nil {
			return err
		}
		switch {
		case op.Kind == OpRewind && op.Summarizes():
			if err := summarize(ctx, tx, op); err != nil {
				return err
			}
		case op.Kind == OpRewind:
			if op.Scope.Conversation() {
				if _, err := tx.ExecContext(ctx, `UPDATE turns SET hidden_by = ? WHERE hidden_by IS NULL AND number >= ?`, id, op.Turn); err != nil {
					return err
				}
			}
		case op.Kind == OpUndo:
			if ok, err := reverseConv(ctx, tx, op); err != nil {
				return err
			} else if ok {
				break // the undone op's recorded change, put back (an undo of an undo is a redo)
			}
			rw, err := getOp(ctx, tx, op.Undoes)
			if err != nil {
				return err
			}
			if rw.Summarizes() {
				if err := unsummarize(ctx, tx, rw, id); err != nil {
					return err
				}
			} else if rw.Scope.Conversation() {
				if _, err := tx.ExecContext(ctx, `UPDATE turns SET hidden_by = ? WHERE hidden_by IS NULL AND seq > ?`, id, rw.Seq); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE turns SET hidden_by = NULL WHERE hidden_by = ?`, rw.ID); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE ops SET state = 'undone' WHERE id = ?`, rw.ID); err != nil {
				return err
			}
		}
		if err := recordConv(ctx, tx, id, mark); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE ops SET state = 'done' WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoints: finish op %d: %w", id, err)
	}
	return nil
}

// PendingOp returns the planned op a crash left unfinished, with its files,
// or an error wrapping ErrNotFound when there is none.
func (x *Index) PendingOp(ctx context.Context) (Op, error) {
	return x.oneOp(ctx, `SELECT id FROM ops WHERE state = 'planned' ORDER BY id LIMIT 1`, "pending op")
}

// LastRewind returns the most recent rewind that is done and not undone,
// with its files, or an error wrapping ErrNothingToUndo.
func (x *Index) LastRewind(ctx context.Context) (Op, error) {
	op, err := x.oneOp(ctx, `SELECT id FROM ops WHERE kind = 'rewind' AND state = 'done' ORDER BY id DESC LIMIT 1`, "last rewind")
	if errors.Is(err, ErrNotFound) {
		return Op{}, fmt.Errorf("checkpoints: last rewind: %w", ErrNothingToUndo)
	}
	return op, err
}

func (x *Index) oneOp(ctx context.Context, query, what string) (Op, error) {
	var op Op
	err := x.read(ctx, func(tx *sql.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, query).Scan(&id); err != nil {
			return notFound(err)
		}
		var err error
		op, err = getOp(ctx, tx, id)
		return err
	})
	if err != nil {
		return Op{}, fmt.Errorf("checkpoints: %s: %w", what, err)
	}
	return op, nil
}

func getOp(ctx context.Context, tx *sql.Tx, id int64) (Op, error) {
	var op Op
	var undoes sql.NullInt64
	var t int64
	err := tx.QueryRowContext(ctx, `SELECT id, seq, kind, turn, scope, state, undoes, prompt, time, action, step FROM ops WHERE id = ?`, id).
		Scan(&op.ID, &op.Seq, &op.Kind, &op.Turn, &op.Scope, &op.State, &undoes, &op.Prompt, &t, &op.Action, &op.Step)
	if err != nil {
		return Op{}, notFound(err)
	}
	op.Undoes, op.Time = undoes.Int64, time.Unix(0, t)
	rows, err := tx.QueryContext(ctx, `SELECT path, before_blob, before_mode, before_size, after_blob, after_mode, after_size, before_dirs, after_dirs, lost
		FROM op_files WHERE op_id = ? ORDER BY path`, id)
	if err != nil {
		return Op{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var f OpFile
		var bb, ab []byte
		var bm, am uint32
		var bd, ad string
		var lost bool
		if err := rows.Scan(&f.Path, &bb, &bm, &f.Before.Size, &ab, &am, &f.After.Size, &bd, &ad, &lost); err != nil {
			return Op{}, err
		}
		if f.Before.Content, err = scanBlob(bb); err != nil {
			return Op{}, err
		}
		if f.After.Content, err = scanBlob(ab); err != nil {
			return Op{}, err
		}
		f.Before.Mode, f.After.Mode = fs.FileMode(bm), fs.FileMode(am)
		f.Before.Dirs, f.After.Dirs = splitDirs(bd), splitDirs(ad)
		f.Before.Lost = lost // lost is recorded for the before state: the one undo restores
		op.Files = append(op.Files, f)
	}
	return op, rows.Err()
}

func joinDirs(d []string) string { return strings.Join(d, "\n") }

func splitDirs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// AbortOp deletes a planned op that changed nothing (or was rolled back),
// with its files.
func (x *Index) AbortOp(ctx context.Context, id int64) error {
	err := x.writeDurable(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM op_files WHERE op_id = ? AND EXISTS (SELECT 1 FROM ops WHERE id = ? AND state = 'planned')`, id, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM ops WHERE id = ? AND state = 'planned'`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoints: abort op %d: %w", id, err)
	}
	return nil
}

// ChangedAfter reports which of paths a turn opened after seq captured.
func (x *Index) ChangedAfter(ctx context.Context, seq int64, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		var n int
		err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM named_snaps s JOIN turns t ON t.id = s.turn_id
			WHERE s.path = ? AND t.seq > ?`, p, seq).Scan(&n)
		if err != nil {
			return nil, fmt.Errorf("checkpoints: changed after: %w", err)
		}
		if n > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}
