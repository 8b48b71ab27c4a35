package checkpoints

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// PathEnd is the state a path had when the turn that captured it ended.
type PathEnd struct {
	Path  string
	State State
}

// ErrStale is wrapped by BeginTurnAfter when the open turn is no longer as
// the caller saw it: another turn was opened, or a path was captured into
// it, after the caller read it. The end states the caller brings would be
// recorded on the wrong turn or miss a path; it should read again.
var ErrStale = errors.New("the open turn changed while its end states were read")

// Seen is the open turn as a caller saw it before reading the end states
// of its captured paths: its id (0 when there was no open turn) and how
// many snapshots it had. Snapshots are only ever added to an open turn, so
// the count tells whether one arrived since.
type Seen struct {
	Turn  int64
	Snaps int
}

// SeenOf returns the Seen of an open turn read with its snapshots (Turn),
// or of no open turn for nil.
func SeenOf(open *Checkpoint) Seen {
	if open == nil {
		return Seen{}
	}
	return Seen{Turn: open.ID, Snaps: len(open.Files)}
}

// BeginTurn opens the next turn (numbered one more than the highest
// active one, 0 when there is none) with the given prompt, records prompt
// as the turn's user message, and stores ends as the end state of the
// previous open turn's snapshots. It does not check that ends were read
// for the turn that is open when it commits: a caller that can race with
// other processes opening turns or capturing uses BeginTurnAfter. It
// returns the new turn.
//
// With a manifest (scan mode) the turn is recorded as scanned, in the same
// transaction: the manifest is the workspace as the turn found it.
func (x *Index) BeginTurn(ctx context.Context, prompt string, ends []PathEnd, manifest *Manifest) (Checkpoint, error) {
	return x.beginTurn(ctx, prompt, nil, ends, manifest)
}

// BeginTurnAfter is BeginTurn for ends read from disk for the open turn
// the caller saw (seen). In its write transaction it checks that this turn
// is still the open one and has gained no snapshot; otherwise it records
// nothing and fails with an error wrapping ErrStale, and the caller reads
// the open turn and its paths again. Without the check, two processes
// opening turns at once could record the end states one read for turn T
// on turn T+1, which the other had just opened, or leave a path captured
// meanwhile without an end state.
func (x *Index) BeginTurnAfter(ctx context.Context, prompt string, seen Seen, ends []PathEnd, manifest *Manifest) (Checkpoint, error) {
	return x.beginTurn(ctx, prompt, &seen, ends, manifest)
}

func (x *Index) beginTurn(ctx context.Context, prompt string, seen *Seen, ends []PathEnd, manifest *Manifest) (Checkpoint, error) {
	now := x.now()
	var cp Checkpoint
	write := x.write
	if manifest != nil && manifest.Since == nil {
		write = x.writeSpilling // a whole manifest: a first scan's, thousands of pages
	}
	err := write(ctx, func(tx *sql.Tx) error {
		prev, err := openTurn(ctx, tx)
		switch {
		case err == nil:
			if seen != nil {
				if prev.ID != seen.Turn {
					return ErrStale
				}
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM snaps WHERE turn_id = ?`, prev.ID).Scan(&n); err != nil {
					return err
				}
				if n != seen.Snaps {
					return ErrStale
				}
			}
			if err := setEnds(ctx, tx, prev.ID, ends); err != nil {
				return err
			}
		case err != ErrNoOpenTurn:
			return err
		case seen != nil && seen.Turn != 0:
			return ErrStale // the turn seen open was hidden by a rewind meanwhile
		}
		seq, err := tick(ctx, tx)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(number) + 1, 0) FROM turns WHERE hidden_by IS NULL`).Scan(&n); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO turns (seq, number, prompt, time) VALUES (?, ?, ?, ?)`,
			seq, n, prompt, now.UnixNano())
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (turn_id, role, text, time) VALUES (?, 'user', ?, ?)`,
			id, prompt, now.UnixNano()); err != nil {
			return err
		}
		cp = Checkpoint{Turn: n, Time: time.Unix(0, now.UnixNano()), Prompt: prompt, ID: id, Seq: seq, Scanned: manifest != nil}
		lo, hi, err := changesSpan(ctx, tx)
		if err != nil {
			return fmt.Errorf("trim changes: %w", err)
		}
		if err := x.trimChanges(ctx, tx, lo, hi); err != nil {
			return err
		}
		if manifest != nil {
			return insertManifest(ctx, tx, id, manifest)
		}
		return nil
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoints: begin turn: %w", err)
	}
	return cp, nil
}

// setEnds records the end states of turn turnID's snapshots that have
// none yet. The rows are updated in clock order (the order they were
// appended in): each grows by its end state, and growing a table's rows
// left to right keeps its pages full, where another order splits pages
// and leaves them partly empty (~15% more bytes for snaps).
func setEnds(ctx context.Context, tx *sql.Tx, turnID int64, ends []PathEnd) error {
	if len(ends) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT path, seq FROM named_snaps WHERE turn_id = ? AND end_state = 0`, turnID)
	if err != nil {
		return err
	}
	seqs := map[string]int64{}
	for rows.Next() {
		var path string
		var seq int64
		if err := rows.Scan(&path, &seq); err != nil {
			rows.Close()
			return err
		}
		seqs[path] = seq
	}
	if err := rows.Close(); err != nil {
		return err
	}
	type end struct {
		seq int64
		PathEnd
	}
	todo := make([]end, 0, len(seqs))
	for _, e := range ends {
		if seq, ok := seqs[e.Path]; ok {
			todo = append(todo, end{seq, e})
			delete(seqs, e.Path) // the first end given for a path counts
		}
	}
	slices.SortFunc(todo, func(a, b end) int { return cmp.Compare(a.seq, b.seq) })
	st, err := tx.PrepareContext(ctx, `UPDATE snaps SET end_state = ?, end_blob = ?, end_mode = ? WHERE seq = ? AND end_state = 0`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, e := range todo {
		state := 2
		if e.State.Exists() {
			state = 1
		}
		if _, err := st.ExecContext(ctx, state, blobArg(e.State.Content), uint32(e.State.Mode), e.seq); err != nil {
			return err
		}
	}
	return nil
}

// OpenTurn returns the open turn (the active turn with the highest number)
// without its snapshots (see Turn and Snap), or an error wrapping
// ErrNoOpenTurn. It is one indexed query, for the capture hot path.
func (x *Index) OpenTurn(ctx context.Context) (Checkpoint, error) {
	cp, err := scanTurn(x.db.QueryRowContext(ctx, openTurnSQL))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNoOpenTurn
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoints: %w", err)
	}
	return cp, nil
}

// Turn returns the active turn numbered n with its snapshots, or an error
// wrapping ErrNotFound.
func (x *Index) Turn(ctx context.Context, n int) (Checkpoint, error) {
	var cp Checkpoint
	err := x.read(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `SELECT id, seq, number, prompt, time, pinned, label, pruned, manifest_id IS NOT NULL AS scanned FROM turns WHERE hidden_by IS NULL AND number = ?`, n)
		var err error
		if cp, err = scanTurn(row); err != nil {
			return notFound(err)
		}
		cp.Files, err = snapsOf(ctx, tx, cp.ID)
		return err
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoints: turn %d: %w", n, err)
	}
	return cp, nil
}

const openTurnSQL = `SELECT id, seq, number, prompt, time, pinned, label, pruned, manifest_id IS NOT NULL AS scanned FROM turns WHERE hidden_by IS NULL ORDER BY number DESC LIMIT 1`

func openTurn(ctx context.Context, tx *sql.Tx) (Checkpoint, error) {
	cp, err := scanTurn(tx.QueryRowContext(ctx, openTurnSQL))
	if err == sql.ErrNoRows {
		return Checkpoint{}, ErrNoOpenTurn
	}
	return cp, err
}

type scanner interface{ Scan(...any) error }

func scanTurn(s scanner) (Checkpoint, error) {
	var cp Checkpoint
	var t int64
	if err := s.Scan(&cp.ID, &cp.Seq, &cp.Turn, &cp.Prompt, &t, &cp.Pinned, &cp.Label, &cp.Pruned, &cp.Scanned); err != nil {
		return Checkpoint{}, err
	}
	cp.Time = time.Unix(0, t)
	return cp, nil
}

const snapCols = `path, blob, mode, size, dirs, end_state, end_blob, end_mode, step`

func scanSnap(s scanner, extra ...any) (FileSnap, error) {
	var path, dirs string
	var blob, endBlob []byte
	var mode, endMode uint32
	var size int64
	var endState, step int
	dst := append([]any{&path, &blob, &mode, &size, &dirs, &endState, &endBlob, &endMode, &step}, extra...)
	if err := s.Scan(dst...); err != nil {
		return FileSnap{}, err
	}
	f, err := snapFrom(path, blob, mode, size, dirs, endState, endBlob, endMode)
	f.Step = step
	return f, err
}

func snapFrom(path string, blob []byte, mode uint32, size int64, dirs string, endState int, endBlob []byte, endMode uint32) (FileSnap, error) {
	f := FileSnap{Path: path, Mode: fs.FileMode(mode), Size: size, Dirs: splitDirs(dirs)}
	var err error
	if f.Content, err = scanBlob(blob); err != nil {
		return FileSnap{}, err
	}
	switch endState {
	case 1:
		id, err := scanBlob(endBlob)
		if err != nil {
			return FileSnap{}, err
		}
		f.End = &State{Content: id, Mode: fs.FileMode(endMode)}
	case 2:
		f.End = &State{}
	}
	return f, nil
}

// sortByPath puts a turn's snapshots in path order. The lists of many
// turns read snapshots in the table's own (clock) order, each row's path
// looked up by its number, and sort each turn's few here: cheaper than
// SQLite walking the (turn_id, path_id) index, reading each row by its
// rowid and sorting every turn's rows by their text.
func sortByPath(files []FileSnap) {
	slices.SortFunc(files, func(a, b FileSnap) int { return strings.Compare(a.Path, b.Path) })
}

func snapsOf(ctx context.Context, tx *sql.Tx, turnID int64) ([]FileSnap, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+snapCols+` FROM named_snaps WHERE turn_id = ? ORDER BY path`, turnID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FileSnap
	for rows.Next() {
		f, err := scanSnap(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// StepRef names the step a capture goes into: step Step of the turn with
// id TurnID. The zero StepRef, or one naming a turn that is no longer the
// open one, means the open turn's latest step (0 when it has none).
//
// With Open set it names the step by its tool call instead: the open
// turn's step with key Key (BeginStep's), which the capture's own
// transaction opens when the turn has none (AddStepSnapsAfter), so a tool
// call's step and its captures cost one index commit, not two.
type StepRef struct {
	TurnID int64
	Step   int
	// Open, Key and Tool: the step to open (see above), as BeginStep
	// takes them; TurnID and Step are then unused.
	Open      bool
	Key, Tool string
}

// Capturing is what CapturingIn found: the open turn, its snapshot of the
// path (nil when the turn has none), the step a capture goes into, and
// whether that step has recorded the path already.
type Capturing struct {
	Turn   Checkpoint
	Snap   *FileSnap
	Step   int
	InStep bool
	// Last is what LastBlob would return for the path, read by the same
	// statement: a capture hands it to the blob store as the base of a
	// delta, with no query of its own. Zero when there is none.
	Last cas.ID
	// seen is what a lookup with StepRef.Open read for opening the step
	// (AddStepSnapsAfter).
	seen stepSeen
}

// stepSeen is the state of the index a step is opened from, as a capture's
// lookup read it: the clock, the number the open turn's next step takes,
// and the change log's span (stepNextSQL's columns).
type stepSeen struct {
	clock, next int64
	lo, hi      sql.NullInt64
}

// Needed reports whether a capture has something to record: the turn has
// no snapshot of the path, or the step has not touched it yet (the first
// touch per path per step is recorded, once per turn in snaps and once per
// later step in step_snaps).
func (c Capturing) Needed() bool { return c.Snap == nil || (c.Snap.Step != c.Step && !c.InStep) }

// CapturingIn is Capturing for a capture into the step ref names, in one
// query.
func (x *Index) CapturingIn(ctx context.Context, path string, ref StepRef) (Capturing, error) {
	stmt, args, err := x.capturingStmt(ctx, ref)
	if err != nil {
		return Capturing{}, err
	}
	c, err := scanCapturing(stmt.QueryRowContext(ctx, append([]any{path}, args...)...), path, ref.Open)
	if err != nil {
		return Capturing{}, fmt.Errorf("checkpoints: %w", err)
	}
	return c, nil
}

// scanCapturing reads a row of capturingSQL for path, or with open of
// capturingOpenSQL.
func scanCapturing(row *sql.Row, path string, open bool) (Capturing, error) {
	var cp Checkpoint
	var t int64
	var sp sql.NullString
	var blob, endBlob []byte
	var mode, endMode sql.NullInt64
	var size sql.NullInt64
	var dirs sql.NullString
	var endState, snapStep sql.NullInt64
	var cur int
	var inStep bool
	var last []byte
	var seen stepSeen
	dst := []any{&cp.ID, &cp.Seq, &cp.Turn, &cp.Prompt, &t, &cp.Pinned, &cp.Label, &cp.Pruned, &cp.Scanned,
		&sp, &blob, &mode, &size, &dirs, &endState, &endBlob, &endMode, &snapStep, &cur, &inStep, &last}
	if open {
		dst = append(dst, &seen.next, &seen.clock, &seen.lo, &seen.hi)
	}
	err := row.Scan(dst...)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNoOpenTurn
	}
	if err != nil {
		return Capturing{}, err
	}
	cp.Time = time.Unix(0, t)
	c := Capturing{Turn: cp, Step: cur, InStep: inStep, seen: seen}
	if len(last) == len(c.Last) {
		copy(c.Last[:], last)
	}
	if !sp.Valid {
		return c, nil
	}
	f, err := snapFrom(sp.String, blob, uint32(mode.Int64), size.Int64, dirs.String, int(endState.Int64), endBlob, uint32(endMode.Int64))
	if err != nil {
		return Capturing{}, fmt.Errorf("snap %s: %w", path, err)
	}
	f.Step = int(snapStep.Int64)
	c.Snap = &f
	return c, nil
}

// capturingStmt returns the prepared lookup of a capture into ref and
// its arguments after the path.
func (x *Index) capturingStmt(ctx context.Context, ref StepRef) (*sql.Stmt, []any, error) {
	if err := x.prepare(ctx); err != nil {
		return nil, nil, err
	}
	if !ref.Open {
		return x.stmts.capturing, []any{ref.TurnID, ref.Step}, nil
	}
	if err := x.prepareAll(ctx, []prepared{{&x.capturingOpen, capturingOpenSQL}}); err != nil {
		return nil, nil, err
	}
	return x.capturingOpen, []any{ref.Key}, nil
}

// capturingSQL takes the path (?1) and a StepRef (?2, ?3). The step is
// ?3 when ?2 is the open turn's id, else the open turn's latest step. Its
// last column is lastBlobSQL's answer for the path.
const capturingSQL = capturingCols + capturingSub + `CASE WHEN u.id = ?2 THEN ?3 ELSE (SELECT coalesce(max(number), 0) FROM steps WHERE turn_id = u.id) END` + capturingFrom

// capturingOpenSQL is capturingSQL for a StepRef with Open set, whose key
// is ?2: the step is the open turn's step with that key, or, when it has
// none (AddStepSnapsAfter opens it), the number the next step takes. Its
// last columns are stepSeenCols.
const capturingOpenSQL = capturingCols + `, ` + stepSeenCols + capturingSub + `coalesce((SELECT number FROM steps WHERE turn_id = u.id AND key = ?2 AND ?2 <> ''),
	(SELECT coalesce(max(number), 0) + 1 FROM steps WHERE turn_id = u.id))` + capturingFrom

// capturingCols, capturingSub and capturingFrom are the capturing
// lookups' text: their columns, and what comes before and after the
// expression of the step (cur) a capture goes into.
const (
	capturingCols = `SELECT t.id, t.seq, t.number, t.prompt, t.time, t.pinned, t.label, t.pruned, t.scanned,
	(SELECT path FROM paths WHERE id = s.path_id), s.blob, s.mode, s.size, s.dirs, s.end_state, s.end_blob, s.end_mode, s.step, t.cur,
	EXISTS (SELECT 1 FROM step_snaps x WHERE x.turn_id = t.id AND x.step = t.cur AND x.path = ?1),
	(` + lastBlobSQL + `)`
	capturingSub = `
	FROM (SELECT u.*, `
	capturingFrom = ` AS cur
		FROM (` + openTurnSQL + `) u LIMIT 1) t LEFT JOIN snaps s ON s.turn_id = t.id AND s.path_id = (SELECT id FROM paths WHERE path = ?1)`
)

// AddSnap records f as the state of f.Path at the start of turn turnID,
// unless the turn already has one for that path (the first capture wins).
// It reports whether f was recorded. The turn must still be active:
// capturing into a turn a rewind has hidden fails with ErrNoOpenTurn.
func (x *Index) AddSnap(ctx context.Context, turnID int64, f FileSnap) (bool, error) {
	if err := x.prepare(ctx); err != nil {
		return false, err
	}
	var added bool
	err := x.write(ctx, func(tx *sql.Tx) error {
		seq, err := tick(ctx, tx)
		if err != nil {
			return err
		}
		ok, err := addSnap(ctx, tx.StmtContext(ctx, x.stmts.addPath), tx.StmtContext(ctx, x.stmts.addSnap), tx.StmtContext(ctx, x.stmts.addStepSnap), turnID, seq, f)
		if err != nil || ok {
			added = ok
			return err
		}
		// Nothing inserted: the path was captured already, or the turn is
		// gone from the active history.
		var hidden sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT hidden_by FROM turns WHERE id = ?`, turnID).Scan(&hidden); err != nil {
			return notFound(err)
		}
		if hidden.Valid {
			return ErrNoOpenTurn
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("checkpoints: add snap %s: %w", f.Path, err)
	}
	return added, nil
}

const addSnapSQL = `INSERT OR IGNORE INTO snaps (turn_id, path_id, seq, blob, mode, size, dirs, step)
	SELECT ?1, (SELECT id FROM paths WHERE path = ?2), ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM turns WHERE id = ?1 AND hidden_by IS NULL)`

// addPathSQL numbers a path (a row of paths) before a snapshot names it.
const addPathSQL = `INSERT OR IGNORE INTO paths (path) VALUES (?)`

// addStepSnapSQL records a path's first touch in a step of a turn that
// captured it in another step already.
const addStepSnapSQL = `INSERT OR IGNORE INTO step_snaps (turn_id, path, seq, blob, mode, size, dirs, step)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM snaps WHERE turn_id = ?1 AND path_id = (SELECT id FROM paths WHERE path = ?2) AND step != ?8)
	AND EXISTS (SELECT 1 FROM turns WHERE id = ?1 AND hidden_by IS NULL)`

// addSnap records f at clock value seq: as the turn's first capture of
// f.Path, or else as the first touch of it in step f.Step when the turn's
// first capture was in another step. It reports whether a row was added.
// path, first and later are addPathSQL, addSnapSQL and addStepSnapSQL,
// prepared (a file edited again in a turn takes the later one every time).
func addSnap(ctx context.Context, path, first, later *sql.Stmt, turnID, seq int64, f FileSnap) (bool, error) {
	if _, err := path.ExecContext(ctx, f.Path); err != nil {
		return false, err
	}
	args := []any{turnID, f.Path, seq, blobArg(f.Content), uint32(f.Mode), f.Size, joinDirs(f.Dirs), f.Step}
	res, err := first.ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return n > 0, err
	}
	if f.Step == 0 {
		return false, nil // step 0 is every turn's first: snaps has it
	}
	if res, err = later.ExecContext(ctx, args...); err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Checkpoints returns the active turns, oldest first, each with its
// snapshots sorted by path. It runs two queries whatever the count, so
// listing 10,000 turns stays fast.
func (x *Index) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	var out []Checkpoint
	err := x.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, seq, number, prompt, time, pinned, label, pruned, manifest_id IS NOT NULL AS scanned FROM turns WHERE hidden_by IS NULL ORDER BY number`)
		if err != nil {
			return err
		}
		byID := map[int64]int{}
		for rows.Next() {
			cp, err := scanTurn(rows)
			if err != nil {
				rows.Close()
				return err
			}
			byID[cp.ID] = len(out)
			out = append(out, cp)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT `+snapCols+`, s.turn_id FROM named_snaps s JOIN turns t ON t.id = s.turn_id
			WHERE t.hidden_by IS NULL`)
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
		return nil, fmt.Errorf("checkpoints: list: %w", err)
	}
	for i := range out {
		sortByPath(out[i].Files)
	}
	return out, nil
}

// AppendMessage appends a message to the open turn.
func (x *Index) AppendMessage(ctx context.Context, role, text string) (Message, error) {
	if !validRole(role) {
		return Message{}, fmt.Errorf("checkpoints: message: %q: %w", role, ErrBadRole)
	}
	now := x.now()
	var m Message
	err := x.write(ctx, func(tx *sql.Tx) error {
		cp, err := openTurn(ctx, tx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO messages (turn_id, role, text, time) VALUES (?, ?, ?, ?)`,
			cp.ID, role, text, now.UnixNano())
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		m = Message{ID: id, Turn: cp.Turn, Role: role, Text: text, Time: time.Unix(0, now.UnixNano())}
		return err
	})
	if err != nil {
		return Message{}, fmt.Errorf("checkpoints: message: %w", err)
	}
	return m, nil
}

func validRole(r string) bool {
	for _, v := range roles {
		if r == v {
			return true
		}
	}
	return false
}

// Conversation returns the active history's messages in order.
func (x *Index) Conversation(ctx context.Context) ([]Message, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT m.id, t.number, m.role, m.text, m.time FROM messages m
		JOIN turns t ON t.id = m.turn_id WHERE t.hidden_by IS NULL AND m.hidden_by IS NULL ORDER BY t.number, m.id`)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: conversation: %w", err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var t int64
		if err := rows.Scan(&m.ID, &m.Turn, &m.Role, &m.Text, &t); err != nil {
			return nil, fmt.Errorf("checkpoints: conversation: %w", err)
		}
		m.Time = time.Unix(0, t)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checkpoints: conversation: %w", err)
	}
	return out, nil
}
