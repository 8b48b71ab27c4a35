package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Step is one tool call of a turn: the agent's pre-tool event opened it.
// Steps are numbered from 1 within their turn; a code rewind to step S of
// turn T puts every path back to its state when step S opened.
type Step struct {
	TurnID int64
	Turn   int // the turn's number
	Number int
	Seq    int64  // clock value when it opened
	Key    string // the agent's tool-call id, or ""
	Tool   string // the tool's name, when the event gave it
	Time   time.Time
	// Files are the paths the step touched first (first touch per path
	// per step), each with its state just before the tool call, sorted by
	// path. End is never set on them.
	Files []FileSnap
}

// ErrNoStep is wrapped when a turn has no step of the number asked for.
var ErrNoStep = errors.New("no such step in that turn")

// BeginStep opens the next step of the open turn. With a key (the agent's
// tool-call id), a step of the open turn with that key is returned rather
// than a second one opened, so a repeated event of one tool call, or a
// second hook process for it, lands in one step; opened says which. It
// fails with an error wrapping ErrNoOpenTurn.
func (x *Index) BeginStep(ctx context.Context, key, tool string) (st Step, opened bool, err error) {
	now := x.now()
	if err := x.prepareStep(ctx); err != nil {
		return Step{}, false, err
	}
	err = x.write(ctx, func(tx *sql.Tx) error {
		st, opened, _, err = x.beginStep(ctx, tx, key, tool, now, 0)
		return err
	})
	if err != nil {
		return Step{}, false, fmt.Errorf("checkpoints: begin step: %w", err)
	}
	return st, opened, nil
}

// beginStep is BeginStep's work in tx, its statements prepared
// (prepareStep), at time now; clock is the clock's value after it.
// unseen, when not 0, is the number the next step of the open turn took
// when the caller found no step with key in it: while that is still the
// next number, no step was opened since, so the turn's steps are not
// searched for the key again.
func (x *Index) beginStep(ctx context.Context, tx *sql.Tx, key, tool string, now time.Time, unseen int) (st Step, opened bool, clock int64, err error) {
	ps := &x.stepStmts
	var turnID sql.NullInt64
	var turn, next int
	var number, seq, t, lo, hi sql.NullInt64
	var was sql.NullString
	at := func(q *sql.Stmt, args ...any) error {
		return tx.StmtContext(ctx, q).QueryRowContext(ctx, args...).Scan(&turnID, &turn, &number, &seq, &was, &t, &next, &clock, &lo, &hi)
	}
	if key == "" || unseen != 0 {
		err = at(ps.next)
	}
	if key != "" && (unseen == 0 || err == nil && next != unseen) {
		err = at(ps.at, key)
	}
	if err == sql.ErrNoRows {
		return Step{}, false, 0, ErrNoOpenTurn
	}
	if err != nil {
		return Step{}, false, 0, err
	}
	st = Step{TurnID: turnID.Int64, Turn: turn}
	if number.Valid {
		st.Number, st.Seq, st.Key, st.Tool, st.Time = int(number.Int64), seq.Int64, key, was.String, time.Unix(0, t.Int64)
		return st, false, clock, nil
	}
	// The clock's next value: read above under this transaction's
	// write lock, so no other writer can have taken it.
	st.Seq, st.Number = clock+1, next
	res, err := tx.StmtContext(ctx, ps.tick).ExecContext(ctx, st.Seq, clock)
	if err != nil {
		return Step{}, false, 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Step{}, false, 0, fmt.Errorf("advance the clock to %d: %d rows, %v", st.Seq, n, err)
	}
	if _, err := tx.StmtContext(ctx, ps.insert).ExecContext(ctx, st.TurnID, st.Number, st.Seq, key, tool, now.UnixNano()); err != nil {
		return Step{}, false, 0, err
	}
	st.Key, st.Tool, st.Time = key, tool, time.Unix(0, now.UnixNano())
	// The insert logged the step (trigger changes_step_opened): one
	// row, numbered one past the log's highest (SQLite's rowid rule).
	if hi.Valid {
		hi.Int64++
	}
	return st, true, st.Seq, x.trimChanges(ctx, tx, lo, hi)
}

// BeginStep's statements, prepared once (prepareStep): a step is opened
// per tool call, and parsing them cost more than running them. The open
// turn, its step with the key (none for an empty key), the next step's
// number, the clock and the change log's span are read by one statement:
// within a transaction every statement that returns rows costs
// database/sql a goroutine, and the two writes return none.
const (
	stepAtSQL = `SELECT t.id, t.number, s.number, s.seq, s.tool, s.time, ` + stepNextCols + `
	LEFT JOIN steps s ON s.turn_id = t.id AND s.key = ?1 AND ?1 <> ''`
	// stepNextSQL is stepAtSQL for no key: it reads none of the turn's
	// steps but its last.
	stepNextSQL  = `SELECT t.id, t.number, NULL, NULL, NULL, NULL, ` + stepNextCols
	stepNextCols = stepSeenCols + `
	FROM (SELECT id, number FROM turns WHERE hidden_by IS NULL ORDER BY number DESC LIMIT 1) t`
	// stepSeenCols are, for the turn t, the number its next step takes,
	// the clock and the change log's span.
	stepSeenCols = `(SELECT coalesce(max(number), 0) + 1 FROM steps WHERE turn_id = t.id), (SELECT value FROM meta WHERE key = 'clock'),
	(SELECT min(id) FROM changes), (SELECT max(id) FROM changes)`
	// stepTickSQL advances the clock to ?1 from ?2, the value the
	// transaction read: an Exec, where a RETURNING would cost a Query.
	stepTickSQL   = `UPDATE meta SET value = ?1 WHERE key = 'clock' AND value = ?2`
	insertStepSQL = `INSERT INTO steps (turn_id, number, seq, key, tool, time) VALUES (?, ?, ?, ?, ?, ?)`
	// insertSeenStepSQL is insertStepSQL for a step numbered from what a
	// capture's lookup read (AddStepSnapsAfter): only while ?1 is still
	// the open turn and ?2 its next step's number.
	insertSeenStepSQL = `INSERT INTO steps (turn_id, number, seq, key, tool, time) SELECT ?1, ?2, ?3, ?4, ?5, ?6
	WHERE ?1 = (SELECT id FROM turns WHERE hidden_by IS NULL ORDER BY number DESC LIMIT 1)
	AND ?2 = (SELECT coalesce(max(number), 0) + 1 FROM steps WHERE turn_id = ?1)`
)

// StepOf returns step n of the active turn numbered turn, with its files.
// It fails with an error wrapping ErrNotFound when there is no such turn,
// and ErrNoStep when the turn has no step n.
func (x *Index) StepOf(ctx context.Context, turn, n int) (Step, error) {
	var st Step
	err := x.read(ctx, func(tx *sql.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM turns WHERE hidden_by IS NULL AND number = ?`, turn).Scan(&id); err != nil {
			return notFound(err)
		}
		steps, err := stepsOf(ctx, tx, `t.id = ? AND s.number = ?`, id, n)
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return ErrNoStep
		}
		st = steps[0]
		return nil
	})
	if err != nil {
		return Step{}, fmt.Errorf("checkpoints: step %d.%d: %w", turn, n, err)
	}
	return st, nil
}

// Steps returns the steps of the active turns, by turn number then step
// number, each with its files.
func (x *Index) Steps(ctx context.Context) ([]Step, error) {
	var out []Step
	err := x.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = stepsOf(ctx, tx, `t.hidden_by IS NULL`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: steps: %w", err)
	}
	return out, nil
}

// stepsOf reads the steps matching where (over steps s JOIN turns t) and
// their first touches: the turn's snapshots made in the step, and the
// step's own step_snaps rows.
func stepsOf(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]Step, error) {
	rows, err := tx.QueryContext(ctx, `SELECT s.turn_id, t.number, s.number, s.seq, s.key, s.tool, s.time
		FROM steps s JOIN turns t ON t.id = s.turn_id WHERE `+where+` ORDER BY t.number, s.number`, args...)
	if err != nil {
		return nil, err
	}
	var out []Step
	type key struct {
		turn int64
		n    int
	}
	at := map[key]int{}
	for rows.Next() {
		var st Step
		var t int64
		if err := rows.Scan(&st.TurnID, &st.Turn, &st.Number, &st.Seq, &st.Key, &st.Tool, &t); err != nil {
			rows.Close()
			return nil, err
		}
		st.Time = time.Unix(0, t)
		at[key{st.TurnID, st.Number}] = len(out)
		out = append(out, st)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	turns := map[int64]bool{}
	for _, st := range out {
		turns[st.TurnID] = true
	}
	// The files: per turn for a few turns, else in one pass over the
	// active turns (list --steps of a long session).
	const filesSQL = `SELECT s.turn_id, s.step, s.path, s.blob, s.mode, s.size, s.dirs FROM named_snaps s %[1]s s.step > 0
		UNION ALL SELECT s.turn_id, s.step, s.path, s.blob, s.mode, s.size, s.dirs FROM step_snaps s %[1]s 1`
	var queries [][]any
	if len(turns) <= 8 {
		for id := range turns {
			queries = append(queries, []any{fmt.Sprintf(filesSQL, "WHERE s.turn_id = ?1 AND"), id})
		}
	} else {
		queries = append(queries, []any{fmt.Sprintf(filesSQL, "JOIN turns t ON t.id = s.turn_id WHERE t.hidden_by IS NULL AND")})
	}
	for _, q := range queries {
		rows, err := tx.QueryContext(ctx, q[0].(string), q[1:]...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var turnID int64
			var step int
			var path, dirs string
			var blob []byte
			var mode uint32
			var size int64
			if err := rows.Scan(&turnID, &step, &path, &blob, &mode, &size, &dirs); err != nil {
				rows.Close()
				return nil, err
			}
			f, err := snapFrom(path, blob, mode, size, dirs, 0, nil, 0)
			if err != nil {
				rows.Close()
				return nil, err
			}
			f.Step = step
			if i, ok := at[key{turnID, step}]; ok {
				out[i].Files = append(out[i].Files, f)
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	for i := range out {
		sort.Slice(out[i].Files, func(a, b int) bool { return out[i].Files[a].Path < out[i].Files[b].Path })
	}
	return out, nil
}
