package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// knownPaths are the paths random histories touch: few, so that they
// collide often, and one that is not UTF-8 and one with a newline, which
// must reach the index as the same bytes.
var knownPaths = []string{"a", "b", "dir/c", "d\nnl", "e\xff\xfe", "f"}

// LastKnownMany returns exactly what the per-path replay it replaced
// returns, for random histories of captures (in steps or not), turn ends,
// scanned turns, rewinds (code, conversation), undos and redos, ops left
// planned, and captures written straight into hidden turns, compared after
// every event. 40 histories (100 with CKPT_LONG=1, 20 with -short);
// CKPT_KNOWN_SEEDS sets the number.
func TestLastKnownManyMatchesReference(t *testing.T) {
	t.Parallel()
	seeds := 40
	if os.Getenv("CKPT_LONG") != "" {
		seeds = 100
	}
	if s := os.Getenv("CKPT_KNOWN_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		seeds = n
	}
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			randomKnownHistory(t, uint64(seed))
		})
	}
}

func randomKnownHistory(t *testing.T, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 14))
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()

	state := func() State {
		if r.IntN(5) == 0 {
			return State{}
		}
		id := cas.Sum([]byte{byte('a' + r.IntN(4))})
		return State{Content: &id, Mode: fs.FileMode([]uint32{0o644, 0o755}[r.IntN(2)])}
	}
	somePaths := func() []string {
		var out []string
		for _, p := range knownPaths {
			if r.IntN(2) == 0 {
				out = append(out, p)
			}
		}
		return out
	}
	asked := append([]string{"never-seen"}, knownPaths...)
	compare := func(what string) {
		t.Helper()
		want, err := refLastKnownMany(ctx, x, asked)
		if err != nil {
			t.Fatalf("%s: reference: %v", what, err)
		}
		got, err := x.LastKnownMany(ctx, asked)
		if err != nil {
			t.Fatalf("%s: LastKnownMany: %v", what, err)
		}
		if d := diffKnown(got, want); d != "" {
			t.Fatalf("seed %d, after %s: LastKnownMany differs from the reference:\n%s", seed, what, d)
		}
	}

	var open int64 // the open turn's id (0: none yet)
	var turns []int64
	type opRec struct {
		id    int64
		state string // done, undone
	}
	var ops []*opRec
	planOp := func(op Op) (Op, bool) {
		for _, p := range somePaths() {
			op.Files = append(op.Files, OpFile{Path: p, Before: state(), After: state()})
		}
		got, err := x.PlanOp(ctx, op)
		if err != nil {
			t.Fatalf("plan %s: %v", op.Kind, err)
		}
		if r.IntN(8) == 0 {
			compare("a planned " + string(op.Kind))
			if r.IntN(2) == 0 {
				if err := x.AbortOp(ctx, got.ID); err != nil {
					t.Fatal(err)
				}
				return got, false
			}
		}
		var d Done
		for _, f := range got.Files {
			if r.IntN(6) == 0 {
				d.Skipped = append(d.Skipped, f.Path)
			}
		}
		if err := x.FinishOp(ctx, got.ID, d); err != nil {
			t.Fatalf("finish %s: %v", op.Kind, err)
		}
		return got, true
	}

	for step := range 40 + r.IntN(40) {
		var what string
		switch n := r.IntN(100); {
		case n < 15 || open == 0: // a turn opens, ending the captures of the open one
			var ends []PathEnd
			for _, p := range somePaths() {
				ends = append(ends, PathEnd{Path: p, State: state()})
			}
			var m *Manifest
			if r.IntN(7) == 0 {
				m = &Manifest{Files: []ManifestEntry{{Path: "a", Blob: cas.Sum([]byte("m")), Mode: 0o644, Size: 1}}}
			}
			cp, err := x.BeginTurn(ctx, "p", ends, m)
			if err != nil {
				t.Fatal(err)
			}
			open = cp.ID
			turns = append(turns, cp.ID)
			what = fmt.Sprintf("turn %d (scanned %v)", cp.Turn, m != nil)
		case n < 50: // a capture in the open turn, in a step or not
			f := FileSnap{Path: knownPaths[r.IntN(len(knownPaths))]}
			s := state()
			f.Content, f.Mode = s.Content, s.Mode
			if r.IntN(3) == 0 {
				st, _, err := x.BeginStep(ctx, "", "Edit")
				if err != nil && !errors.Is(err, ErrNoOpenTurn) {
					t.Fatal(err)
				}
				f.Step = st.Number
			}
			if _, err := x.AddSnap(ctx, open, f); err != nil && !errors.Is(err, ErrNoOpenTurn) {
				t.Fatal(err)
			}
			what = "capture of " + strconv.Quote(f.Path)
		case n < 57: // a capture written straight into any turn, hidden or not, with any end
			what = "a raw capture"
			rawSnap(t, x, r, turns[r.IntN(len(turns))], knownPaths[r.IntN(len(knownPaths))], state())
		case n < 80: // a rewind
			scope := []Scope{ScopeCode, ScopeBoth, ScopeConversation}[r.IntN(3)]
			op, done := planOp(Op{Kind: OpRewind, Scope: scope, Turn: r.IntN(len(turns) + 1)})
			if done {
				ops = append(ops, &opRec{id: op.ID, state: "done"})
			}
			what = fmt.Sprintf("rewind %d (%s)", op.ID, scope)
		default: // an undo of the latest finished op not undone (a redo when that is an undo)
			var u *opRec
			for i := len(ops) - 1; i >= 0 && u == nil; i-- {
				if ops[i].state == "done" {
					u = ops[i]
				}
			}
			if u == nil {
				continue
			}
			op, done := planOp(Op{Kind: OpUndo, Scope: ScopeBoth, Undoes: u.id})
			if done {
				u.state = "undone"
				ops = append(ops, &opRec{id: op.ID, state: "done"})
			}
			what = fmt.Sprintf("undo %d of %d", op.ID, u.id)
		}
		compare(fmt.Sprintf("event %d: %s", step, what))
	}
}

// rawSnap inserts a capture of path into turn with a fresh clock value and
// a random end (none, recorded absent, recorded st), as no API call would:
// hidden turns included, which reaches captures ending together.
func rawSnap(t *testing.T, x *Index, r *rand.Rand, turn int64, path string, st State) {
	t.Helper()
	var seq int64
	if err := x.db.QueryRow(`UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	end := r.IntN(3)
	var blob any
	if end == 1 && st.Content == nil {
		end = 2
	}
	if end == 1 {
		blob = st.Content[:]
	}
	if _, err := x.db.Exec(`INSERT OR IGNORE INTO paths (path) VALUES (?)`, path); err != nil {
		t.Fatal(err)
	}
	if _, err := x.db.Exec(`INSERT OR IGNORE INTO snaps (turn_id, path_id, seq, blob, mode, size, end_state, end_blob, end_mode)
		VALUES (?, (SELECT id FROM paths WHERE path = ?), ?, NULL, 0, 0, ?, ?, ?)`, turn, path, seq, end, blob, uint32(st.Mode)); err != nil {
		t.Fatal(err)
	}
}

func diffKnown(got, want map[string]Known) string {
	var b strings.Builder
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			fmt.Fprintf(&b, "%q: got unknown, want %v\n", p, showState(w.State))
		case !sameKnown(g.State, w.State):
			fmt.Fprintf(&b, "%q: got %v, want %v\n", p, showState(g.State), showState(w.State))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			fmt.Fprintf(&b, "%q: got %v, want unknown\n", p, showState(g.State))
		}
	}
	return b.String()
}

// sameKnown compares every field LastKnown sets: the content and the whole
// mode (Equal looks at the permission bits only).
func sameKnown(a, b State) bool {
	if (a.Content == nil) != (b.Content == nil) || a.Content != nil && *a.Content != *b.Content {
		return false
	}
	return a.Mode == b.Mode && a.Size == b.Size && len(a.Dirs) == 0 && len(b.Dirs) == 0 && a.Lost == b.Lost
}

func showState(s State) string {
	if s.Content == nil {
		return fmt.Sprintf("absent(mode %o)", s.Mode)
	}
	return fmt.Sprintf("%s(mode %o)", s.Content.Short(), s.Mode)
}
