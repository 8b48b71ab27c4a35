package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
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

// events watches the session from after until it has n events.
func (s *session) events(after int64, n int) []wire.Event {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out []wire.Event
	err := s.c.Watch(ctx, controller.WatchOptions{After: after, Interval: time.Millisecond}, func(e controller.Event) {
		if out = append(out, wire.NewEvent(e)); len(out) == n {
			cancel()
		}
	})
	if err != context.Canceled {
		s.t.Fatal(err)
	}
	return out
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
	s.compare(name+".golden", b.String())
}

// goldenText compares text with testdata/name.txt.golden byte for byte;
// -update rewrites it.
func (s *session) goldenText(name, text string) {
	s.t.Helper()
	s.compare(name+".txt.golden", text)
}

// compare compares got, its temp directories named $WORKSPACE and $STORE,
// with the file testdata/name; -update rewrites the file.
func (s *session) compare(name, got string) {
	s.t.Helper()
	got = strings.NewReplacer(s.ws, "$WORKSPACE", s.root, "$STORE").Replace(got)
	path := filepath.Join("testdata", name)
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

// TestMain runs the tests in UTC: the text for people shows local times,
// and its golden files must be the same bytes everywhere.
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}

// text is what write writes on out and msgs, each under its heading.
func text(write func(out, msgs io.Writer)) string {
	var out, msgs bytes.Buffer
	write(&out, &msgs)
	return "-- out --\n" + out.String() + "-- msgs --\n" + msgs.String()
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

	cps, _, cerr := c.Checkpoints(ctx, controller.ListOptions{Steps: true})
	must(cps, cerr)
	s.golden("checkpoints", wire.NewCheckpoints(cps))
	s.goldenText("checkpoints", text(func(out, _ io.Writer) {
		l := wire.NewCheckpointList(out, false)
		for _, cp := range cps {
			must(0, l.Add(cp))
		}
		must(0, l.Close())
	}))
	cps, _, cerr = c.Checkpoints(ctx, controller.ListOptions{})
	s.golden("checkpoint_without_steps", wire.NewCheckpoint(must(cps, cerr)[0]))
	changes := wire.NewChanges(must(c.Status(ctx)))
	s.golden("changes", changes)
	s.goldenText("changes", text(func(out, _ io.Writer) { wire.WriteChanges(out, changes) }))
	msgs := wire.NewMessages(must(c.Conversation(ctx)))
	s.golden("messages", msgs)
	s.goldenText("messages", text(func(out, _ io.Writer) { wire.WriteMessages(out, msgs) }))

	pt := controller.Target{Turn: 0}
	diffs, skipped, err := c.Diff(ctx, pt)
	s.golden("diff", wire.NewDiff(pt, must(diffs, err), skipped))
	s.goldenText("diff", text(func(out, msgs io.Writer) { wire.WriteDiff(out, msgs, pt, diffs, skipped) }))
	pt = controller.Target{Turn: 0, Step: 2}
	diffs, skipped, err = c.Diff(ctx, pt)
	s.golden("diff_step", wire.NewDiff(pt, must(diffs, err), skipped))

	fork := must(c.Fork(ctx, 1, controller.ForkOptions{To: "s1-fork"}))
	s.golden("fork", wire.NewFork(c.Session(), 1, fork))
	s.goldenText("fork", text(func(out, msgs io.Writer) { must(0, wire.WriteFork(out, msgs, c.Session(), 1, fork)) }))

	dry := wire.NewResult(must(c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeBoth, controller.RewindOptions{DryRun: true})))
	s.golden("result_dry_run", dry)
	s.goldenText("result_dry_run", text(func(out, msgs io.Writer) { must(0, dry.WriteText(out, msgs, "rewind")) }))
	seq := s.events(-1, 1)[0].Seq // a "resync" at the newest change
	res := wire.NewResult(must(c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeBoth, controller.RewindOptions{})))
	s.golden("result", res)
	s.goldenText("result", text(func(out, msgs io.Writer) { must(0, res.WriteText(out, msgs, "rewind")) }))
	s.golden("events", s.events(seq, 1))
	undo := wire.NewResult(must(c.Undo(ctx, controller.RewindOptions{})))
	s.golden("result_undo", undo)
	s.goldenText("result_undo", text(func(out, msgs io.Writer) { must(0, undo.WriteReversal(out, msgs, false, 0)) }))
	history := wire.NewHistory(must(c.History(ctx)))
	s.golden("history", history)
	s.goldenText("history", text(func(out, _ io.Writer) { must(0, wire.WriteHistory(out, history)) }))

	store := controller.OpenStore(s.root)
	defer store.Close()
	sessions := must(store.Sessions(ctx, ""))
	s.golden("sessions", wire.NewSessions(sessions))
	s.goldenText("sessions", text(func(out, msgs io.Writer) { must(0, wire.WriteSessions(out, msgs, sessions, false)) }))
	s.goldenText("sessions_tree", text(func(out, msgs io.Writer) { must(0, wire.WriteSessions(out, msgs, sessions, true)) }))
}

// TestNeverNull: documents built from empty controller values have [] for
// every list, without jsondoc's help (the MCP server encodes them with
// encoding/json, and its output schemas refuse null for a list).
func TestNeverNull(t *testing.T) {
	for name, doc := range map[string]any{
		"checkpoints": wire.NewCheckpoints([]controller.Checkpoint{{Steps: []controller.Step{}}}),
		"result":      wire.NewResult(controller.Result{}),
		"diff":        wire.NewDiff(controller.Target{}, nil, nil),
		"messages":    wire.NewMessages(nil),
		"fork":        wire.NewFork("s", 0, controller.Result{}),
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
