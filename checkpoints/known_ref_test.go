package checkpoints

// The reference for LastKnownMany's exactness: the per-path reading it
// replaced, which loads every capture and op file of a path and replays
// them. TestLastKnownManyMatchesReference compares the two.

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math"
)

// refLastKnownMany is LastKnownMany as it was: every event of each path,
// replayed.
func refLastKnownMany(ctx context.Context, x *Index, paths []string) (map[string]Known, error) {
	out := map[string]Known{}
	err := x.read(ctx, func(tx *sql.Tx) error {
		h, err := refLoadOps(ctx, tx)
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
	return out, err
}

// refHistory is what LastKnown reads about one path.
type refHistory struct {
	snaps   []refSnap
	files   []refFile
	ops     map[int64]refOp
	undone  map[int64]int64 // rewind id -> the seq of the undo that reversed it
	scanned []int64         // seqs of the scanned turns
	// snapsQ and filesQ are loadPath's queries, prepared in its
	// transaction (which closes them) at its first call.
	snapsQ, filesQ *sql.Stmt
}

type refSnap struct {
	// the capture, and the first turn of the active history opened after
	// it (0: none yet)
	seq, end int64
	ended    bool // an end state was recorded, when end opened
	state    State
}

type refFile struct {
	op, seq int64
	after   State
}

type refOp struct {
	seq, undoes int64
	kind        OpKind
	state       string
}

// refLoadOps reads what LastKnown needs that does not depend on the path:
// the ops and the scanned turns.
func refLoadOps(ctx context.Context, tx *sql.Tx) (*refHistory, error) {
	h := &refHistory{ops: map[int64]refOp{}, undone: map[int64]int64{}}
	rows, err := tx.QueryContext(ctx, `SELECT id, seq, kind, coalesce(undoes, 0), state FROM ops`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var o refOp
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
func (h *refHistory) loadPath(ctx context.Context, tx *sql.Tx, path string) error {
	h.snaps, h.files = h.snaps[:0], h.files[:0]
	if h.snapsQ == nil {
		// Prepared once per transaction: parsing costs more than the
		// lookup, and LastKnownMany asks for thousands of paths.
		var err error
		if h.snapsQ, err = tx.PrepareContext(ctx, `SELECT s.seq, s.end_state, s.end_blob, s.end_mode,
		coalesce((SELECT min(t.seq) FROM turns t WHERE t.seq > s.seq AND t.hidden_by IS NULL), 0),
		coalesce((SELECT min(t.seq) FROM turns t WHERE t.seq > s.seq), 0)
		FROM named_snaps s WHERE s.path = ?`); err != nil {
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
		var k refSnap
		var endState int
		var blob []byte
		var mode uint32
		var recorder int64 // the turn whose opening recorded the end
		if err := rows.Scan(&k.seq, &endState, &blob, &mode, &k.end, &recorder); err != nil {
			rows.Close()
			return err
		}
		// An end a turn now hidden recorded is not the end: the turn
		// was opened again by a conversation rewind.
		k.ended = endState != 0 && recorder == k.end
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
		var f refFile
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
func (h refHistory) asOf(limit int64) (State, bool) {
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
