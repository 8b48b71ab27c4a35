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

// expect reads len(want) events and compares them, as "kind turn path",
// with want; Seq must increase.
func expect(t *testing.T, ch <-chan controller.Event, session string, want ...string) {
	t.Helper()
	var got []string
	var last int64
	for range want {
		select {
		case e := <-ch:
			if e.Seq <= last || e.Session != session || e.Result != nil {
				t.Errorf("event %+v: want Seq > %d, session %s, no Result", e, last, session)
			}
			last = e.Seq
			got = append(got, strings.TrimSpace(fmt.Sprint(e.Kind, " ", e.Turn, " ", e.Path)))
		case <-time.After(20 * time.Second):
			t.Fatalf("events %q, then none for 20s; want %q", got, want)
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
	seq, err := e.c.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, stop := watchAll(t, e.c, seq)
	defer stop()

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
	must(other.Capture(ctx, "a.txt"))
	e.write("a.txt", "a1")
	must(other.AppendMessage(ctx, "assistant", "changed a"))
	must(other.BeginTurn(ctx, "second"))
	must(other.Rewind(ctx, 0, controller.ScopeCode, controller.RewindOptions{}))
	must(other.Undo(ctx, controller.UndoOptions{}))
	must(other.Redo(ctx, controller.UndoOptions{}))
	must(other.Summarize(ctx, 0, controller.From, "all of it"))
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
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	e.turn("first")
	seq, err := e.c.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, stop := watchAll(t, e.c, seq)
	defer stop()
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
		if _, err := c.Capture(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.BeginTurn(ctx, "second"); err != nil {
		t.Fatal(err)
	}
}
