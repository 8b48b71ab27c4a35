package wire_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/jsondoc"
)

// TestCheckpointList: the list written a turn at a time is, as JSON, byte
// for byte the whole list encoded at once (with and without steps, and
// empty), and for people a table with a line per turn and per step.
func TestCheckpointList(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	c := s.c
	must(c.BeginTurn(ctx, "make things", controller.TurnOptions{}))
	st := must(c.BeginStep(ctx, controller.StepOptions{Key: "toolu_1", Tool: "Edit"}))
	s.capture(&st, "new.txt")
	s.write("new.txt", "new\n")
	must(c.BeginTurn(ctx, "second", controller.TurnOptions{}))
	if err := c.Pin(ctx, 1, true, "good"); err != nil {
		t.Fatal(err)
	}
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{})
	must(cps, err)
	steps := must(c.Steps(ctx))
	write := func(cps []controller.Checkpoint, asJSON, withSteps bool) string {
		var b bytes.Buffer
		l := wire.NewCheckpointList(&b, asJSON, withSteps, steps)
		for _, cp := range cps {
			if err := l.Add(cp); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	whole := func(doc any) string {
		var b bytes.Buffer
		if err := jsondoc.Encode(&b, doc, true); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if got, want := write(cps, true, true), whole(wire.NewCheckpoints(cps, steps)); got != want {
		t.Errorf("with steps: streamed\n%s\nwhole\n%s", got, want)
	}
	plain := []wire.Checkpoint{wire.NewCheckpoint(cps[0]), wire.NewCheckpoint(cps[1])}
	if got, want := write(cps, true, false), whole(plain); got != want {
		t.Errorf("without steps: streamed\n%s\nwhole\n%s", got, want)
	}
	if got := write(nil, true, false); got != "[]\n" {
		t.Errorf("empty: %q", got)
	}
	lines := strings.Split(write(cps, false, true), "\n")
	stamp := func(cp controller.Checkpoint) string { return cp.Time.Local().Format("2006-01-02 15:04:05") }
	for i, want := range []string{
		"TURN  TIME                 PROMPT                                            FILES",
		"0     " + stamp(cps[0]) + "  make things" + strings.Repeat(" ", 50-len("make things")) + "+new.txt",
		"  .1  " + stamp(cps[0])[:11],
		"1     " + stamp(cps[1]) + "  [pinned: good] second",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: got %q, want it to start %q", i, lines[min(i, len(lines)-1)], want)
		}
	}
	if !strings.Contains(lines[2], "Edit toolu_1") || !strings.HasSuffix(lines[2], "  +new.txt") {
		t.Errorf("step line %q", lines[2])
	}

	// Finish says what a page left out, or why nothing was listed.
	for _, tc := range []struct {
		cps                []controller.Checkpoint
		total, last, since int
		msgs               string
	}{
		{cps[1:], 2, 1, -1, "showing turns 1–1 of 2 active; `ckpt list --since TURN --limit N` pages, `--limit 0` lists all\n"},
		{cps, 2, 1, -1, ""},
		{nil, 2, 1, 5, "no active turn from 5 on: the newest is 1\n"},
		{nil, 0, -1, -1, "no checkpoints yet: open a turn with `ckpt turn PROMPT`\n"},
	} {
		var out, msgs bytes.Buffer
		l := wire.NewCheckpointList(&out, false, false, nil)
		for _, cp := range tc.cps {
			must(0, l.Add(cp))
		}
		if err := l.Finish(&msgs, tc.total, tc.last, tc.since); err != nil || msgs.String() != tc.msgs || (out.Len() > 0) != (len(tc.cps) > 0) {
			t.Errorf("Finish after %d turns: msgs %q, out %q, %v; want msgs %q", len(tc.cps), msgs.String(), out.String(), err, tc.msgs)
		}
	}
}
