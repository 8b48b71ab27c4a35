package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
		if err := x.addSnaps(ctx, tx, turnID, snaps, added, nil); err != nil {
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
// once (see StepRef.Open). step is the step the caller's lookup found
// (Capturing.Step): when it is still the number the next step takes, the
// turn's steps are not searched for key again. With no snaps it only
// opens the step. When turnID, what the lookup found, is no longer the
// open turn it records nothing and fails with an error wrapping
// ErrStepMoved; with no open turn, ErrNoOpenTurn.
func (x *Index) AddStepSnapsAfter(ctx context.Context, turnID int64, key, tool string, step int, snaps []FileSnap, ready func() error) (Step, []bool, error) {
	now := x.now()
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
		var clock int64
		if st, _, clock, err = x.beginStep(ctx, tx, key, tool, now, step); err != nil {
			return err
		}
		if st.TurnID != turnID {
			return ErrStepMoved
		}
		for i := range snaps {
			snaps[i].Step = st.Number
		}
		if len(snaps) > 0 {
			if err := x.addSnaps(ctx, tx, turnID, snaps, added, &clock); err != nil {
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

// addSnaps records snaps into turn turnID in tx (AddSnapsAfter's
// statements, prepared), saying in added which it recorded. snaps is not
// empty. clock, when not nil, is the clock's value the transaction read
// (BeginStep's statements prepared): the clock is advanced from it by an
// Exec, where tickNSQL's RETURNING is a query, and in a transaction every
// query costs database/sql a goroutine.
func (x *Index) addSnaps(ctx context.Context, tx *sql.Tx, turnID int64, snaps []FileSnap, added []bool, clock *int64) error {
	// One clock step per snapshot, taken at once: seqs last-n+1..last.
	var last int64
	if clock == nil {
		if err := tx.StmtContext(ctx, x.stmts.tickN).QueryRowContext(ctx, len(snaps)).Scan(&last); err != nil {
			return err
		}
	} else {
		last = *clock + int64(len(snaps))
		res, err := tx.StmtContext(ctx, x.stepStmts.tick).ExecContext(ctx, last, *clock)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("advance the clock to %d: %d rows, %v", last, n, err)
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
			c, err := scanCapturing(stmt.QueryRowContext(ctx, append([]any{p}, args...)...), p)
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
