package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
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
			SELECT path, seq, blob, mode, size, dirs, lost FROM snaps WHERE seq > ?1
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

// LastKnown returns the state ckpt last saw path left in by the agent or by
// ckpt itself: the end state of the last turn that captured it (recorded
// when the next turn opened), or the state a later rewind wrote. An undo
// puts back what ckpt knew just before the rewind it reverses, along with
// the bytes: a hand edit the undo restored is still not the agent's, and
// an undone rewind no longer counts. known is false when there is none,
// when the latest is a turn still open (the agent may still be working on
// the file) or an end that was not recorded, and when a scanned turn
// opened at or after the latest: in scan mode every change made while a
// turn is open is the agent's (its shell's), which ckpt cannot tell from a
// person's. A file whose current state differs from a known one was
// changed by someone else: a person, or another session.
func (x *Index) LastKnown(ctx context.Context, path string) (st State, known bool, err error) {
	m, err := x.LastKnownMany(ctx, []string{path})
	if err != nil {
		return State{}, false, err
	}
	k, ok := m[path]
	return k.State, ok, nil
}

// LastKnownMany is LastKnown for many paths in one read: the map holds the
// known ones.
func (x *Index) LastKnownMany(ctx context.Context, paths []string) (map[string]Known, error) {
	out := map[string]Known{}
	err := x.read(ctx, func(tx *sql.Tx) error {
		h, err := loadKnowOps(ctx, tx)
		if err != nil {
			return err
		}
		for _, p := range paths {
			if err := h.loadPath(ctx, tx, p); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if st, known := h.asOf(math.MaxInt64); known {
				out[p] = Known{State: st}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: last known: %w", err)
	}
	return out, nil
}

// Known is a state LastKnownMany knows.
type Known struct{ State State }

// knowHistory is what LastKnown reads about one path.
type knowHistory struct {
	snaps   []knowSnap
	files   []knowFile
	ops     map[int64]knowOp
	undone  map[int64]int64 // rewind id -> the seq of the undo that reversed it
	scanned []int64         // seqs of the scanned turns
	// snapsQ and filesQ are loadPath's queries, prepared in its
	// transaction (which closes them) at its first call.
	snapsQ, filesQ *sql.Stmt
}

type knowSnap struct {
	seq, end int64 // the capture, and the first turn opened after it (0: none yet)
	ended    bool  // an end state was recorded
	state    State
}

type knowFile struct {
	op, seq int64
	after   State
}

type knowOp struct {
	seq, undoes int64
	kind        OpKind
	state       string
}

// loadKnowOps reads what LastKnown needs that does not depend on the path:
// the ops and the scanned turns.
func loadKnowOps(ctx context.Context, tx *sql.Tx) (*knowHistory, error) {
	h := &knowHistory{ops: map[int64]knowOp{}, undone: map[int64]int64{}}
	rows, err := tx.QueryContext(ctx, `SELECT id, seq, kind, coalesce(undoes, 0), state FROM ops`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var o knowOp
		if err := rows.Scan(&id, &o.seq, &o.kind, &o.undoes, &o.state); err != nil {
			rows.Close()
			return nil, err
		}
		h.ops[id] = o
		if o.kind == OpUndo && o.state == "done" {
			h.undone[o.undoes] = o.seq
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT seq FROM turns WHERE manifest_id IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		h.scanned = append(h.scanned, seq)
	}
	return h, rows.Err()
}

// loadPath reads path's captures and op files into h, replacing those of
// the path read before.
func (h *knowHistory) loadPath(ctx context.Context, tx *sql.Tx, path string) error {
	h.snaps, h.files = h.snaps[:0], h.files[:0]
	if h.snapsQ == nil {
		// Prepared once per transaction: parsing costs more than the
		// lookup, and LastKnownMany asks for thousands of paths.
		var err error
		if h.snapsQ, err = tx.PrepareContext(ctx, `SELECT s.seq, s.end_state, s.end_blob, s.end_mode,
		coalesce((SELECT min(t.seq) FROM turns t WHERE t.seq > s.seq), 0)
		FROM snaps s WHERE s.path = ?`); err != nil {
			return err
		}
		if h.filesQ, err = tx.PrepareContext(ctx, `SELECT op_id, seq, after_blob, after_mode FROM op_files WHERE path = ?`); err != nil {
			return err
		}
	}
	rows, err := h.snapsQ.QueryContext(ctx, path)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k knowSnap
		var endState int
		var blob []byte
		var mode uint32
		if err := rows.Scan(&k.seq, &endState, &blob, &mode, &k.end); err != nil {
			rows.Close()
			return err
		}
		k.ended = endState != 0
		if endState == 1 {
			id, err := scanBlob(blob)
			if err != nil {
				rows.Close()
				return err
			}
			k.state = State{Content: id, Mode: fs.FileMode(mode)}
		}
		h.snaps = append(h.snaps, k)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	rows, err = h.filesQ.QueryContext(ctx, path)
	if err != nil {
		return err
	}
	for rows.Next() {
		var f knowFile
		var blob []byte
		var mode uint32
		if err := rows.Scan(&f.op, &f.seq, &blob, &mode); err != nil {
			rows.Close()
			return err
		}
		id, err := scanBlob(blob)
		if err != nil {
			rows.Close()
			return err
		}
		f.after = State{Content: id, Mode: fs.FileMode(mode)}
		h.files = append(h.files, f)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return nil
}

// asOf is LastKnown as it stood just before clock value limit: only
// events before it count, and a rewind counts unless an undo before limit
// reversed it. An undo's event is what was known just before its rewind.
func (h knowHistory) asOf(limit int64) (State, bool) {
	var best int64 = -1
	var st State
	known := false
	for _, k := range h.snaps {
		if k.seq >= limit {
			continue
		}
		if k.end == 0 || k.end >= limit {
			return State{}, false // its turn was still open: the agent may be at work
		}
		// Two captures can end as one turn opens (one in a turn a
		// conversation rewind hid, whose end was never recorded, and one
		// made since): a recorded end is what was there then.
		if k.end > best || k.end == best && k.ended && !known {
			best, known, st = k.end, k.ended, k.state
		}
	}
	for _, f := range h.files {
		o := h.ops[f.op]
		if f.seq >= limit || f.seq <= best || o.state == "planned" {
			continue
		}
		switch o.kind {
		case OpRewind:
			if u, ok := h.undone[f.op]; ok && u < limit {
				continue
			}
			best, known, st = f.seq, true, f.after
		case OpUndo:
			best = f.seq
			st, known = h.asOf(h.ops[o.undoes].seq)
		}
	}
	for _, seq := range h.scanned {
		if seq < limit && seq >= best {
			known = false
		}
	}
	if !known {
		st = State{}
	}
	return st, known
}

// ChangedAfter reports which of paths a turn opened after seq captured.
func (x *Index) ChangedAfter(ctx context.Context, seq int64, paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		var n int
		err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM snaps s JOIN turns t ON t.id = s.turn_id
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
