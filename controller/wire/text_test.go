package wire_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/jsondoc"
)

// TestResultText: a result's text for people puts a dry run's plan and
// the handed-back prompt on out and the rest on msgs, and a result with
// skipped paths ends with an error wrapping ErrIncomplete (never for a dry
// run, which changed nothing).
func TestResultText(t *testing.T) {
	skip := []controller.Skip{{Path: "b c.txt", Reason: "unreadable"}}
	for _, tc := range []struct {
		name           string
		res            controller.Result
		verb           string
		out, msgs      string
		incomplete     bool
		redo, reversal bool
	}{
		{name: "rewind", verb: "rewind",
			res:  controller.Result{Turn: 2, Scope: controller.ScopeBoth, Restored: []string{"a.txt"}, Deleted: []string{"n.txt"}, Prompt: "fix it", Changed: true},
			out:  "fix it\n",
			msgs: "  restore a.txt\n  delete  n.txt\nrewound code and conversation to turn 2: 1 restored, 1 deleted (undo with `ckpt undo`)\nconversation cut before turn 2; its prompt, to edit and resend:\n"},
		{name: "dry run step", verb: "rewind",
			res:  controller.Result{Turn: 1, Step: 2, Scope: controller.ScopeCode, Restored: []string{"a.txt"}, Skipped: skip, DryRun: true, Changed: true},
			out:  "  would restore a.txt\n",
			msgs: "  skip    b c.txt: unreadable\ndry run: nothing changed; rewinding code to turn 1 before tool call 2 (1.2) would do the above: 1 restored, 0 deleted, 1 skipped\n"},
		{name: "skipped", verb: "revert", incomplete: true,
			res:  controller.Result{Turn: 3, Scope: controller.ScopeCode, Skipped: skip},
			msgs: "  skip    b c.txt: unreadable\nnothing reverted: every path that differs was skipped (above)\n"},
		{name: "undo", reversal: true,
			res:  controller.Result{Turn: 0, Scope: controller.ScopeCode, Restored: []string{"a.txt"}, Conflicts: []string{"c.txt"}, Changed: true, Of: "rewind"},
			msgs: "  restore a.txt\n  overwrote c.txt (kept: `ckpt redo` brings it back)\nundone (the rewind of code to turn 0): 1 restored, 0 deleted; `ckpt redo` re-applies it, `ckpt history` lists every op\n"},
		{name: "redo nothing", reversal: true, redo: true,
			res:  controller.Result{Turn: 0, Scope: controller.ScopeCode},
			msgs: "nothing to redo: what op 7 did is there already\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, msgs bytes.Buffer
			r := wire.NewResult(tc.res)
			var err error
			if tc.reversal {
				err = r.WriteReversal(&out, &msgs, tc.redo, 7)
			} else {
				err = r.WriteText(&out, &msgs, tc.verb)
			}
			if out.String() != tc.out || msgs.String() != tc.msgs {
				t.Errorf("got out %q msgs %q, want %q and %q", out.String(), msgs.String(), tc.out, tc.msgs)
			}
			if errors.Is(err, wire.ErrIncomplete) != tc.incomplete {
				t.Errorf("err %v, want incomplete %v", err, tc.incomplete)
			}
		})
	}
	err := wire.NewResult(controller.Result{Skipped: skip}).Incomplete("undo")
	if want := "undo incomplete: 1 path(s) left as they are (see skipped): b c.txt"; err == nil || err.Error() != want {
		t.Errorf("Incomplete: %v, want %s", err, want)
	}
}

// TestSessionsUnreadable: a session whose index cannot be read is a line
// of question marks with the reason on one line, and a warning on msgs
// counts such sessions.
func TestSessionsUnreadable(t *testing.T) {
	var out, msgs bytes.Buffer
	infos := []controller.SessionInfo{{ID: "bad", Error: "index: locked\nretry"}, {ID: "good", Workspace: "/w", Turns: 2}}
	if err := wire.WriteSessions(&out, &msgs, infos, false); err != nil {
		t.Fatal(err)
	}
	want := "SESSION                              TURNS   OWN SIZE     SHARED  LAST USE             WORKSPACE\n" +
		"bad                                      ?          ?          ?  ?                    unreadable: index: locked; retry\n" +
		"good                                     2        0 B          -  -                    /w\n"
	if out.String() != want || msgs.String() != "warning: 1 session(s) have an unreadable index; `ckpt sessions rm ID --force` removes one\n" {
		t.Errorf("got out\n%s\nmsgs %q", out.String(), msgs.String())
	}
}

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
	withSteps, _, err := c.Checkpoints(ctx, controller.ListOptions{Steps: true})
	must(withSteps, err)
	write := func(cps []controller.Checkpoint, asJSON bool) string {
		var b bytes.Buffer
		l := wire.NewCheckpointList(&b, asJSON)
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
	if got, want := write(withSteps, true), whole(wire.NewCheckpoints(withSteps)); got != want {
		t.Errorf("with steps: streamed\n%s\nwhole\n%s", got, want)
	}
	plain := []wire.Checkpoint{wire.NewCheckpoint(cps[0]), wire.NewCheckpoint(cps[1])}
	if got, want := write(cps, true), whole(plain); got != want {
		t.Errorf("without steps: streamed\n%s\nwhole\n%s", got, want)
	}
	if got := write(nil, true); got != "[]\n" {
		t.Errorf("empty: %q", got)
	}
	lines := strings.Split(write(withSteps, false), "\n")
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
		l := wire.NewCheckpointList(&out, false)
		for _, cp := range tc.cps {
			must(0, l.Add(cp))
		}
		if err := l.Finish(&msgs, tc.total, tc.last, tc.since); err != nil || msgs.String() != tc.msgs || (out.Len() > 0) != (len(tc.cps) > 0) {
			t.Errorf("Finish after %d turns: msgs %q, out %q, %v; want msgs %q", len(tc.cps), msgs.String(), out.String(), err, tc.msgs)
		}
	}
}
