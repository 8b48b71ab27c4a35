package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
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
