package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/jsondoc"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the documents the test builds")

// session is a real session on a real temp store, its times from a clock
// that ticks one second per reading, so its documents are the same bytes
// on every run but for the temp directories, which golden replaces.
type session struct {
	t        *testing.T
	c        *controller.Controller
	ws, root string
}

func newSession(t *testing.T) *session {
	t.Helper()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	s := &session{t: t, ws: t.TempDir(), root: t.TempDir()}
	c, err := controller.Open(context.Background(), controller.Options{Workspace: s.ws, Store: s.root, Session: "s1", Clock: clock, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s.c = c
	return s
}

func (s *session) write(rel, text string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.ws, rel), []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) capture(st *controller.Step, rel string) {
	s.t.Helper()
	if _, errs := s.c.Capture(context.Background(), controller.CaptureOptions{Paths: []string{filepath.Join(s.ws, rel)}, Step: st}); errs[0] != nil {
		s.t.Fatal(errs[0])
	}
}

// must returns v, or panics with err (which fails the test, naming it):
// the scenario has no step that may fail.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// golden compares doc, encoded as the CLI prints it (indented, lists never
// null), with testdata/name.golden byte for byte; -update rewrites it.
func (s *session) golden(name string, doc any) {
	s.t.Helper()
	var b bytes.Buffer
	if err := jsondoc.Encode(&b, doc, true); err != nil {
		s.t.Fatal(err)
	}
	got := strings.NewReplacer(s.ws, "$WORKSPACE", s.root, "$STORE").Replace(b.String())
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		s.t.Errorf("%s: got\n%s\nwant\n%s", path, got, want)
	}
}

// TestGolden drives a session through turns with steps, a name that is
// not UTF-8, a pin, a message, a fork, a rewind with its event, an undo,
// and checks every document against its golden file.
func TestGolden(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	c := s.c
	s.write("keep.txt", "v0\n")
	s.write("old.txt", "bye\n")

	must(c.BeginTurn(ctx, "make things", controller.TurnOptions{}))
	st := must(c.BeginStep(ctx, controller.StepOptions{Key: "toolu_1", Tool: "Edit"}))
	s.capture(&st, "keep.txt")
	s.write("keep.txt", "v1\n")
	st = must(c.BeginStep(ctx, controller.StepOptions{Key: "toolu_2", Tool: "Write"}))
	s.capture(&st, "new.txt")
	s.write("new.txt", "new\n")
	s.capture(nil, "caf\xe9.txt")
	s.write("caf\xe9.txt", "latin-1 name\n")
	s.capture(nil, "old.txt")
	if err := os.Remove(filepath.Join(s.ws, "old.txt")); err != nil {
		t.Fatal(err)
	}
	must(c.AppendMessage(ctx, "assistant", "made them"))

	must(c.BeginTurn(ctx, "second", controller.TurnOptions{}))
	s.capture(nil, "keep.txt")
	s.write("keep.txt", "v2\n")
	if err := c.Pin(ctx, 1, true, "good"); err != nil {
		t.Fatal(err)
	}
	must(c.BeginTurn(ctx, "third", controller.TurnOptions{}))
	s.capture(nil, "keep.txt")
	s.write("keep.txt", "v3\n")

	cps, _, cerr := c.Checkpoints(ctx, controller.ListOptions{})
	must(cps, cerr)
	steps := must(c.Steps(ctx))
	s.golden("checkpoints", wire.NewCheckpoints(cps, steps))
	s.golden("checkpoint_without_steps", wire.NewCheckpoint(cps[0]))
	s.golden("changes", wire.NewChanges(must(c.Status(ctx))))
	s.golden("messages", wire.NewMessages(must(c.Conversation(ctx))))

	pt := controller.Target{Turn: 0}
	diffs, skipped, err := c.Diff(ctx, pt)
	s.golden("diff", wire.NewDiff(pt, must(diffs, err), skipped))
	pt = controller.Target{Turn: 0, Step: 2}
	diffs, skipped, err = c.Diff(ctx, pt)
	s.golden("diff_step", wire.NewDiff(pt, must(diffs, err), skipped))

	fork := must(c.Fork(ctx, 1, controller.ForkOptions{To: "s1-fork"}))
	s.golden("fork", wire.NewFork(c.Session(), 1, fork))

	s.golden("result_dry_run", wire.NewResult(must(c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeBoth, controller.RewindOptions{DryRun: true}))))
	var events []wire.Event
	stop := c.Subscribe(func(e controller.Event) { events = append(events, wire.NewEvent(e)) })
	s.golden("result", wire.NewResult(must(c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeBoth, controller.RewindOptions{}))))
	stop()
	s.golden("events", events)
	s.golden("result_undo", wire.NewResult(must(c.Undo(ctx, controller.UndoOptions{}))))
	s.golden("history", wire.NewHistory(must(c.History(ctx))))

	store := controller.OpenStore(s.root)
	defer store.Close()
	s.golden("sessions", wire.NewSessions(must(store.Sessions(ctx, ""))))
}

// TestNeverNull: documents built from empty controller values have [] for
// every list, without jsondoc's help (the MCP server encodes them with
// encoding/json, and its output schemas refuse null for a list).
func TestNeverNull(t *testing.T) {
	for name, doc := range map[string]any{
		"checkpoints": wire.NewCheckpoints([]controller.Checkpoint{{}}, nil),
		"result":      wire.NewResult(controller.Result{}),
		"diff":        wire.NewDiff(controller.Target{}, nil, nil),
		"messages":    wire.NewMessages(nil),
		"fork":        wire.NewFork("s", 0, controller.ForkResult{}),
		"history":     wire.NewHistory([]controller.HistoryEntry{{}}),
		"changes":     wire.NewChanges(nil),
		"sessions":    wire.NewSessions(nil),
	} {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("null")) {
			t.Errorf("%s: %s", name, b)
		}
	}
}
