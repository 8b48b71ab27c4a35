package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// watchAll runs Watch in the background from after and returns what it
// reports, one "kind turn path" line per event, and a stop function that
// waits for the watch to end.
func watchAll(t *testing.T, c *controller.Controller, after int64) (<-chan controller.Event, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan controller.Event, 256)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, controller.WatchOptions{Interval: 5 * time.Millisecond, After: after}, func(e controller.Event) { ch <- e })
	}()
	return ch, func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Watch ended with %v, want context.Canceled", err)
		}
	}
}

// newest is the Seq of the session's newest change, as a Watch from now
// (After -1) reports it in its first event, a "resync".
func newest(t *testing.T, c *controller.Controller) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var first controller.Event
	if err := c.Watch(ctx, controller.WatchOptions{After: -1}, func(e controller.Event) { first = e; cancel() }); err != context.Canceled {
		t.Fatal(err)
	}
	if first.Kind != "resync" {
		t.Fatalf("Watch from now began with %+v, want a resync", first)
	}
	return first.Seq
}

// expect reads len(want) events and compares them, as "kind turn path",
// with want; Seq must increase.
func expect(t *testing.T, ch <-chan controller.Event, session string, want ...string) {
	t.Helper()
	var got []string
	var last int64
	for range want {
		select {
		case e := <-ch:
			if e.Seq <= last || e.Session != session {
				t.Errorf("event %+v: want Seq > %d, session %s", e, last, session)
			}
			last = e.Seq
			got = append(got, strings.TrimSpace(fmt.Sprint(e.Kind, " ", e.Turn, " ", e.Path)))
		case <-time.After(2 * time.Minute): // a hang guard, generous for a loaded machine
			t.Fatalf("events %q, then none for 2 minutes; want %q", got, want)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	select {
	case e := <-ch:
		t.Fatalf("unexpected event %+v after %q", e, got)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestWatchSeesOtherControllers: a Watch on one Controller reports, in
// commit order, what another Controller of the same session does: every
// turn, capture, message, rewind, undo, redo, summarize and pin.
func TestWatchSeesOtherControllers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.turn("first")
	events, stop := watchAll(t, e.c, -1)
	defer stop()
	expect(t, events, e.session(), "resync 0")

	other, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, errs := other.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.txt"}})
	must(nil, errs[0])
	e.write("a.txt", "a1")
	must(other.AppendMessage(ctx, "assistant", "changed a"))
	must(other.BeginTurn(ctx, "second", controller.TurnOptions{}))
	must(other.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{}))
	must(other.Undo(ctx, controller.RewindOptions{}))
	must(other.Redo(ctx, controller.RewindOptions{}))
	must(other.Summarize(ctx, 0, false, "all of it"))
	must(nil, other.Pin(ctx, 0, true, "keep"))
	expect(t, events, e.session(),
		"captured 0 a.txt",
		"message 0",
		"turn_opened 1",
		"message 1", // the prompt, as the turn's user message
		"rewound 0",
		"undone 0",
		"redone 0",
		"message 0", // the summary
		"summarized 0",
		"pinned 0",
	)
}

// TestWatchSeesOtherProcesses: what a hook does in a process of its own
// reaches a Watch, in order. The other process is this test binary run
// again as watchHelper.
func TestWatchSeesOtherProcesses(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("first")
	events, stop := watchAll(t, e.c, -1)
	defer stop()
	expect(t, events, e.session(), "resync 0")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchHelper$")
	cmd.Env = append(os.Environ(), "CKPT_WATCH_HELPER="+e.ws+string(filepath.ListSeparator)+e.store)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	expect(t, events, e.session(), "captured 0 a.txt", "captured 0 b.txt", "turn_opened 1", "message 1")
}

// TestWatchHelper is the other process of TestWatchSeesOtherProcesses.
func TestWatchHelper(t *testing.T) {
	env := os.Getenv("CKPT_WATCH_HELPER")
	if env == "" {
		t.Skip("run by TestWatchSeesOtherProcesses")
	}
	ws, store, _ := strings.Cut(env, string(filepath.ListSeparator))
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"a.txt", "b.txt"} {
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	if _, err := c.BeginTurn(ctx, "second", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestWatchResyncsBehindTrim: the change log keeps only the newest
// changes (trimmed when a turn opens); a watcher that had not read up to
// the trim gets one resync event in place of what it missed, then what
// follows, and one that had read up to it sees no resync. The log stays
// bounded however long the session runs.
func TestWatchResyncsBehindTrim(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		e.write(f, f)
	}
	e.turn("first") // turn_opened 0, message 0
	stale := newest(t, e.c)
	const keep = 4
	w, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, NoAutoRetention: true, ChangeLogKeep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if _, errs := w.Capture(ctx, controller.CaptureOptions{Paths: []string{f}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	if _, err := w.BeginTurn(ctx, "second", controller.TurnOptions{}); err != nil { // trims: 4 changes stay after the marker
		t.Fatal(err)
	}

	t.Run("behind", func(t *testing.T) {
		events, stop := watchAll(t, e.c, stale)
		defer stop()
		expect(t, events, e.session(), "resync 0", "captured 0 b.txt", "captured 0 c.txt", "turn_opened 1", "message 1")
	})
	t.Run("read up to the trim", func(t *testing.T) {
		events, stop := watchAll(t, e.c, stale+1) // had seen the capture of a.txt
		defer stop()
		expect(t, events, e.session(), "captured 0 b.txt", "captured 0 c.txt", "turn_opened 1", "message 1")
	})
	t.Run("bounded", func(t *testing.T) {
		for i := range 20 {
			e.write("a.txt", fmt.Sprint(i))
			if _, errs := w.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.txt"}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if _, err := w.BeginTurn(ctx, fmt.Sprint("turn ", i), controller.TurnOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		chs, err := controller.IndexOf(w).ChangesAfter(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(chs) < keep+1 || len(chs) > 2*keep || chs[0].Kind != checkpoints.ChangeTrimmed {
			t.Fatalf("change log holds %d rows, first %+v; want %d to %d, the first a trim marker", len(chs), chs[0], keep+1, 2*keep)
		}
		if last := newest(t, e.c); chs[len(chs)-1].ID != last {
			t.Fatalf("newest row %d, Watch from now starts at %d", chs[len(chs)-1].ID, last)
		}
	})
}
