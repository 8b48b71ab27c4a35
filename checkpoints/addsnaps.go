package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AddSnaps is AddSnap for many snapshots of one turn in one transaction:
// one commit for all of them, so `ckpt capture` of many paths and a hook
// event pay for one. added[i] reports whether snaps[i] was recorded (false
// when the turn already had that path, an earlier entry of snaps
// included: the first capture wins; or, for a snapshot with a Step, when
// that step of the turn had it). It records nothing when it fails; a
// turn a rewind has hidden fails with ErrNoOpenTurn.
func (x *Index) AddSnaps(ctx context.Context, turnID int64, snaps []FileSnap) ([]bool, error) {
	return x.AddSnapsAfter(ctx, turnID, snaps, nil)
}

// AddSnapsAfter is AddSnaps whose transaction commits only once ready
// (when not nil) returns nil: ready waits for the blobs the snapshots name
// to be durable, and the inserts run meanwhile, so a capture pays for the
// blob commit and the index statements at once, never for a row that
// names a blob not yet durable. When ready fails nothing is recorded and
// its error is returned. ready is called once, holding the index's write
// lock: it must not wait for this index.
func (x *Index) AddSnapsAfter(ctx context.Context, turnID int64, snaps []FileSnap, ready func() error) ([]bool, error) {
	added := make([]bool, len(snaps))
	if len(snaps) == 0 {
		if ready != nil {
			if err := ready(); err != nil {
				return nil, fmt.Errorf("checkpoints: add snaps: %w", err)
			}
		}
		return added, nil
	}
	if err := x.prepare(ctx); err != nil {
		return nil, err
	}
	err := x.write(ctx, func(tx *sql.Tx) error {
		if err := x.addSnaps(ctx, tx, turnID, snaps, added, 0); err != nil {
			return err
		}
		if ready != nil {
			return ready()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: add snaps: %w", err)
	}
	return added, nil
}

// ErrStepMoved is wrapped by AddStepSnapsAfter when the turn the caller
// looked up is no longer the open one: it recorded nothing, and a capture
// looks again.
var ErrStepMoved = errors.New("a turn opened since the capture's lookup")

// AddStepSnapsAfter is AddSnapsAfter into the step of the open turn with
// key (as BeginStep opens it, with tool): the transaction opens the step
// when the turn has none, then records snaps into it, each with Step set
// to its number, so the step and the captures of its tool call commit at
// once (see StepRef.Open). cg is what the caller's lookup found (a
// CapturingIn with StepRef.Open): when nothing was written since, the
// step is opened from what it read, with no query in the transaction (in
// a transaction each query costs database/sql a goroutine). With no snaps
// it only opens the step. When cg's turn is no longer the open one it
// records nothing and fails with an error wrapping ErrStepMoved; with no
// open turn, ErrNoOpenTurn.
func (x *Index) AddStepSnapsAfter(ctx context.Context, cg Capturing, key, tool string, snaps []FileSnap, ready func() error) (Step, []bool, error) {
	now := x.now()
	turnID := cg.Turn.ID
	added := make([]bool, len(snaps))
	if err := x.prepare(ctx); err != nil {
		return Step{}, nil, err
	}
	if err := x.prepareStep(ctx); err != nil {
		return Step{}, nil, err
	}
	var st Step
	err := x.write(ctx, func(tx *sql.Tx) error {
		var err error
		var last int64 // the clock, advanced for snaps
		st, last, err = x.openSeenStep(ctx, tx, cg, key, tool, now, len(snaps))
		if err != nil {
			return err
		}
		if st.Number == 0 {
			// Written since the lookup, or a step it found: as BeginStep.
			var clock int64
			if st, _, clock, err = x.beginStep(ctx, tx, key, tool, now, cg.Step); err != nil {
				return err
			}
			if st.TurnID != turnID {
				return ErrStepMoved
			}
			if last = clock; len(snaps) > 0 {
				if last, err = x.advance(ctx, tx, clock, len(snaps)); err != nil {
					return err
				}
			}
		}
		for i := range snaps {
			snaps[i].Step = st.Number
		}
		if len(snaps) > 0 {
			if err := x.addSnaps(ctx, tx, turnID, snaps, added, last); err != nil {
				return err
			}
		}
		if ready != nil {
			return ready()
		}
		return nil
	})
	if err != nil {
		return Step{}, nil, fmt.Errorf("checkpoints: add snaps: %w", err)
	}
	return st, added, nil
}

// openSeenStep opens, in tx, the new step cg's lookup found its key
// lacks, from what it read, when nothing has advanced the clock since (a
// turn, a step, a capture or an op since would have): it advances the
// clock for the step and n captures, inserts the step and returns it with
// the clock's new value. A zero Step says it did not: the lookup found
// the step, or the clock moved.
func (x *Index) openSeenStep(ctx context.Context, tx *sql.Tx, cg Capturing, key, tool string, now time.Time, n int) (Step, int64, error) {
	seen := cg.seen
	if seen.next == 0 || int64(cg.Step) != seen.next {
		return Step{}, 0, nil
	}
	last, err := x.advanceFrom(ctx, tx, seen.clock, 1+n)
	if err != nil || last == 0 {
		return Step{}, 0, err
	}
	st := Step{TurnID: cg.Turn.ID, Turn: cg.Turn.Turn, Number: cg.Step, Seq: seen.clock + 1, Key: key, Tool: tool, Time: time.Unix(0, now.UnixNano())}
	res, err := tx.StmtContext(ctx, x.stepStmts.seen).ExecContext(ctx, st.TurnID, st.Number, st.Seq, key, tool, now.UnixNano())
	if err != nil {
		return Step{}, 0, err
	}
	if k, err := res.RowsAffected(); err != nil || k != 1 {
		if err == nil {
			err = ErrStepMoved // a rewind hid the turn, with no clock value of its own
		}
		return Step{}, 0, err
	}
	// The insert logged the step (trigger changes_step_opened).
	hi := seen.hi
	if hi.Valid {
		hi.Int64++
	}
	return st, last, x.trimChanges(ctx, tx, seen.lo, hi)
}

// advance advances the clock, which tx read as clock, by n and returns
// its new value.
func (x *Index) advance(ctx context.Context, tx *sql.Tx, clock int64, n int) (int64, error) {
	last, err := x.advanceFrom(ctx, tx, clock, n)
	if err == nil && last == 0 {
		err = fmt.Errorf("advance the clock from %d: it moved", clock)
	}
	return last, err
}

// advanceFrom advances the clock by n if it is still clock, by an Exec
// (stepTickSQL), and returns its new value; 0 when it was not clock.
func (x *Index) advanceFrom(ctx context.Context, tx *sql.Tx, clock int64, n int) (int64, error) {
	last := clock + int64(n)
	res, err := tx.StmtContext(ctx, x.stepStmts.tick).ExecContext(ctx, last, clock)
	if err != nil {
		return 0, err
	}
	k, err := res.RowsAffected()
	if err != nil || k != 1 {
		return 0, err
	}
	return last, nil
}

// addSnaps records snaps into turn turnID in tx (AddSnapsAfter's
// statements, prepared), saying in added which it recorded. snaps is not
// empty. last, when not 0, is the clock's value once advanced for snaps,
// which the caller did; 0 advances it here (tickNSQL).
func (x *Index) addSnaps(ctx context.Context, tx *sql.Tx, turnID int64, snaps []FileSnap, added []bool, last int64) error {
	// One clock step per snapshot, taken at once: seqs last-n+1..last.
	if last == 0 {
		if err := tx.StmtContext(ctx, x.stmts.tickN).QueryRowContext(ctx, len(snaps)).Scan(&last); err != nil {
			return err
		}
	}
	// Each insert checks that the turn is active (not hidden by a
	// rewind since the caller read it).
	path, first, later := tx.StmtContext(ctx, x.stmts.addPath), tx.StmtContext(ctx, x.stmts.addSnap), tx.StmtContext(ctx, x.stmts.addStepSnap)
	some := false
	for i, f := range snaps {
		seq := last - int64(len(snaps)-1-i)
		var err error
		if added[i], err = addSnap(ctx, path, first, later, turnID, seq, f); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		some = some || added[i]
	}
	if !some {
		// Nothing inserted: every path was captured already, or the
		// turn is gone from the active history.
		var hidden sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT hidden_by FROM turns WHERE id = ?`, turnID).Scan(&hidden); err != nil {
			return notFound(err)
		}
		if hidden.Valid {
			return ErrNoOpenTurn
		}
	}
	return nil
}

// tickNSQL advances the clock by n and returns its new value. Prepared
// once: parsing an UPDATE ... RETURNING costs more than running it.
const tickNSQL = `UPDATE meta SET value = value + ? WHERE key = 'clock' RETURNING value`

// CapturingAllIn is CapturingIn for many paths in one read transaction
// (each query of its own would begin one, which costs more than the
// lookup), so every path sees the same open turn and step. One path is
// one statement, which is a snapshot by itself: no transaction is begun.
// It fails with an error wrapping ErrNoOpenTurn.
func (x *Index) CapturingAllIn(ctx context.Context, paths []string, ref StepRef) ([]Capturing, error) {
	if len(paths) == 1 {
		c, err := x.CapturingIn(ctx, paths[0], ref)
		if err != nil {
			return nil, err
		}
		return []Capturing{c}, nil
	}
	out := make([]Capturing, len(paths))
	lookup, args, err := x.capturingStmt(ctx, ref)
	if err != nil {
		return nil, err
	}
	err = x.read(ctx, func(tx *sql.Tx) error {
		stmt := tx.StmtContext(ctx, lookup)
		for i, p := range paths {
			c, err := scanCapturing(stmt.QueryRowContext(ctx, append([]any{p}, args...)...), p, ref.Open)
			if err != nil {
				return err
			}
			out[i] = c
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	return out, nil
}
