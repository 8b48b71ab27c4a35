package checkpoints

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strings"
)

// LastKnown returns the state ckpt last saw path left in by the agent or by
// ckpt itself: the end state of the last turn that captured it (recorded
// when the next turn opened), or the state a later rewind wrote. An undo
// puts back what ckpt knew just before the rewind it reverses, along with
// the bytes: a hand edit the undo restored is still not the agent's, and
// an undone rewind no longer counts. A capture's turn ends when the next
// turn of the active history opens: after a conversation rewind the last
// active turn is open again, and the end a now hidden turn recorded for it
// no longer counts. known is false when there is none, when the latest is
// a turn still open (the agent may still be working on the file) or an
// end that was not recorded, and when a scanned turn
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

// Known is a state LastKnownMany knows.
type Known struct{ State State }

// LastKnownMany is LastKnown for many paths in one read: the map holds the
// known ones.
//
// Its cost per path is a few index seeks whatever the history's length:
// one query per round reads, for every path, only the latest capture
// before the round's limit (snaps_path), the turns around it (turns'
// unique seq) and the latest op file that counts (op_files_path_seq,
// walked back past op files of planned ops and of undone rewinds only).
// A path whose latest event is an undo goes to a next round, limited to
// just before the rewind the undo reversed; undos of undos add rounds.
func (x *Index) LastKnownMany(ctx context.Context, paths []string) (map[string]Known, error) {
	out := map[string]Known{}
	err := x.read(ctx, func(tx *sql.Tx) error {
		k, err := loadKnowing(ctx, tx)
		if err != nil {
			return err
		}
		round := map[int64][]string{math.MaxInt64: dedup(paths)}
		for len(round) > 0 {
			next := map[int64][]string{}
			for limit, ps := range round {
				if err := k.lookup(ctx, tx, limit, ps, out, next); err != nil {
					return err
				}
			}
			round = next
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: last known: %w", err)
	}
	return out, nil
}

func dedup(paths []string) []string {
	seen := make(map[string]bool, len(paths))
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// knowing is what LastKnownMany reads once, whatever the paths: the ops
// (a session has few) and the scanned turns' seqs.
type knowing struct {
	ops     map[int64]knowOp
	ids     []int64         // the ops' ids, ascending
	undone  map[int64]int64 // rewind id -> the seq of the done undo that reversed it (the last by id)
	scanned []int64         // seqs of the scanned turns, ascending
}

type knowOp struct {
	seq, undoes int64
	kind        OpKind
	state       string
}

func loadKnowing(ctx context.Context, tx *sql.Tx) (*knowing, error) {
	k := &knowing{ops: map[int64]knowOp{}, undone: map[int64]int64{}}
	rows, err := tx.QueryContext(ctx, `SELECT id, seq, kind, coalesce(undoes, 0), state FROM ops ORDER BY id`)
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
		k.ops[id] = o
		k.ids = append(k.ids, id)
		if o.kind == OpUndo && o.state == "done" {
			k.undone[o.undoes] = o.seq
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT seq FROM turns WHERE manifest_id IS NOT NULL ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		k.scanned = append(k.scanned, seq)
	}
	return k, rows.Err()
}

// counting returns, as a JSON array, the ops whose files count as events
// before clock value limit: finished rewinds and undos, less the rewinds
// an undo before limit reversed.
func (k *knowing) counting(limit int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for _, id := range k.ids {
		o := k.ops[id]
		if o.state == "planned" || o.kind != OpRewind && o.kind != OpUndo {
			continue
		}
		if u, ok := k.undone[id]; ok && o.kind == OpRewind && u < limit {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, id)
	}
	b.WriteByte(']')
	return b.String()
}

// scannedIn reports whether a scanned turn opened in [from, limit).
func (k *knowing) scannedIn(from, limit int64) bool {
	i := sort.Search(len(k.scanned), func(i int) bool { return k.scanned[i] >= from })
	return i < len(k.scanned) && k.scanned[i] < limit
}

// knownSQL reads, for each path of ?1 (a JSON array of hex-encoded paths,
// so any bytes pass) as it stood before clock value ?2:
//   - sm: its latest capture; e: the first turn of the active history
//     opened after it (a capture ends when the next turn opens, and every
//     earlier capture ends no later); er: the first turn opened after it,
//     hidden or not (the one whose opening recorded the end, when that
//     was not e); tp: the last turn opened before it;
//   - the first capture (by seq) ending with e whose end was recorded;
//   - the latest op file after e of one of the ops ?3 (a JSON array of ids).
//
// Every subquery is a seek on an index of (path, seq) or of seq; the CTEs
// are materialized so that none runs twice.
const knownSQL = `
WITH p AS (
	SELECT key AS i, CAST(unhex(value) AS TEXT) AS path FROM json_each(?1)
), s AS MATERIALIZED (
	SELECT i, path, (SELECT max(seq) FROM named_snaps WHERE path = p.path AND seq < ?2) AS sm FROM p
), t AS MATERIALIZED (
	SELECT i, path, sm,
		(SELECT min(seq) FROM turns WHERE seq > s.sm AND hidden_by IS NULL) AS e,
		(SELECT min(seq) FROM turns WHERE seq > s.sm) AS er,
		(SELECT max(seq) FROM turns WHERE seq < s.sm) AS tp
	FROM s
), c AS MATERIALIZED (
	SELECT i, sm, e, er,
		(SELECT seq FROM named_snaps WHERE path = t.path AND seq > coalesce(t.tp, ?4) AND seq <= t.sm AND end_state != 0
			ORDER BY seq LIMIT 1) AS cs,
		(SELECT seq FROM op_files WHERE path = t.path AND seq < ?2 AND seq > coalesce(t.e, ?4)
			AND op_id IN (SELECT value FROM json_each(?3)) ORDER BY seq DESC LIMIT 1) AS fs
	FROM t
)
SELECT c.i, c.sm, c.e, c.er, s.end_state, s.end_blob, s.end_mode, f.seq, f.op_id, f.after_blob, f.after_mode
FROM c LEFT JOIN snaps s ON s.seq = c.cs LEFT JOIN op_files f ON f.seq = c.fs`

// lookup settles what paths' states were known just before clock value
// limit into out, or, for a path whose latest event then was an undo,
// files it in next under the seq of the rewind that undo reversed.
func (k *knowing) lookup(ctx context.Context, tx *sql.Tx, limit int64, paths []string, out map[string]Known, next map[int64][]string) error {
	hexed := make([]string, len(paths))
	for i, p := range paths {
		hexed[i] = hex.EncodeToString([]byte(p))
	}
	arg, err := json.Marshal(hexed)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, knownSQL, string(arg), limit, k.counting(limit), int64(math.MinInt64))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i                  int
			sm, e, er, fseq    sql.NullInt64
			fop                sql.NullInt64
			endState, endMode  sql.NullInt64
			endBlob, afterBlob []byte
			afterMode          sql.NullInt64
		)
		if err := rows.Scan(&i, &sm, &e, &er, &endState, &endBlob, &endMode, &fseq, &fop, &afterBlob, &afterMode); err != nil {
			return err
		}
		p := paths[i]
		best := int64(-1)
		var st State
		known := false
		if sm.Valid {
			if !e.Valid || e.Int64 >= limit {
				continue // its turn was still open: the agent may be at work
			}
			best = e.Int64
			// An end recorded when a turn now hidden opened is not this
			// turn's end: a conversation rewind hid that turn, which
			// opened this one again, and the agent went on editing what
			// it had captured here (a capture of a path a turn already
			// has records nothing) until e opened.
			if endState.Valid && er.Int64 == e.Int64 { // a recorded end: what was there when the next turn opened
				known = true
				if endState.Int64 == 1 {
					id, err := scanBlob(endBlob)
					if err != nil {
						return fmt.Errorf("%s: %w", p, err)
					}
					st = State{Content: id, Mode: fs.FileMode(uint32(endMode.Int64))}
				}
			}
		}
		if fseq.Valid {
			best = fseq.Int64
			o := k.ops[fop.Int64]
			if o.kind == OpUndo {
				// What was known just before the undone rewind, unless a
				// scanned turn opened since the undo.
				before := k.ops[o.undoes].seq
				if before >= limit {
					return fmt.Errorf("%s: undo %d reverses op %d, not an earlier one", p, fop.Int64, o.undoes)
				}
				if !k.scannedIn(best, limit) {
					next[before] = append(next[before], p)
				}
				continue
			}
			id, err := scanBlob(afterBlob)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			st, known = State{Content: id, Mode: fs.FileMode(uint32(afterMode.Int64))}, true
		}
		if known && !k.scannedIn(best, limit) {
			out[p] = Known{State: st}
		}
	}
	return rows.Err()
}
