package wire

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/quote"
)

// ErrIncomplete is wrapped by the error a rewind, revert, undo or redo
// result ends with when it left paths it meant to change as they are:
// they are listed as skipped, with the reason (Result.Incomplete).
var ErrIncomplete = errors.New("left as they are (see skipped)")

// Incomplete returns the error a result with skipped paths ends with
// (wrapping ErrIncomplete, naming verb and the paths), or nil: a dry run
// changes nothing, so its skips are part of its plan.
func (r Result) Incomplete(verb string) error {
	if r.DryRun || len(r.Skipped) == 0 {
		return nil
	}
	paths := make([]string, len(r.Skipped))
	for i, s := range r.Skipped {
		paths[i] = quote.Path(s.Path)
	}
	return fmt.Errorf("%s incomplete: %d path(s) %w: %s", verb, len(paths), ErrIncomplete, strings.Join(paths, ", "))
}

// PointName says a rewind point for people: "turn 3", or "turn 3 before
// tool call 2 (3.2)".
func PointName(p controller.Target) string {
	if p.Step == 0 {
		return fmt.Sprintf("turn %d", p.Turn)
	}
	return fmt.Sprintf("turn %d before tool call %d (%s)", p.Turn, p.Step, p)
}

// point is where the result went.
func (r Result) point() controller.Target { return controller.Target{Turn: r.Turn, Step: r.Step} }

// sayer writes one line for people to w.
func sayer(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

// fileCounts says what the result does to files, ": 2 restored, 1
// deleted", or nothing when it leaves the code alone.
func (r Result) fileCounts() string {
	if !controller.Scope(r.Scope).Code() {
		return ""
	}
	return ": " + r.Counts()
}

// WriteFiles lists what the result restores and deletes on plan, and what
// it skips on msgs, a line each.
func (r Result) WriteFiles(plan, msgs io.Writer) {
	would := ""
	if r.DryRun {
		would = "would "
	}
	for _, p := range r.Restored {
		fmt.Fprintf(plan, "  %srestore %s\n", would, quote.Path(p))
	}
	for _, p := range r.Deleted {
		fmt.Fprintf(plan, "  %sdelete  %s\n", would, quote.Path(p))
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(msgs, "  skip    %s: %s\n", quote.Path(s.Path), s.Reason)
	}
}

// WriteText writes a rewind's or a revert's result (verb "rewind" or
// "revert") for people: a summary on msgs, with the handed-back prompt on
// out; a dry run's plan is the command's data, so its lines go to out too.
// It returns what Incomplete says of the result.
func (r Result) WriteText(out, msgs io.Writer, verb string) error {
	say := sayer(msgs)
	plan := msgs
	if r.DryRun {
		plan = out
	}
	r.WriteFiles(plan, msgs)
	for _, p := range r.Conflicts {
		say("  changed since the agent: %s", quote.Path(p))
	}
	for _, p := range r.NotRecorded {
		say("  not recorded: %s (never captured or scanned at or after turn %d; left alone)", quote.Path(p), r.Turn)
	}
	what := map[controller.Scope]string{
		controller.ScopeCode:         "code",
		controller.ScopeConversation: "conversation",
		controller.ScopeBoth:         "code and conversation",
	}[controller.Scope(r.Scope)]
	counts := r.fileCounts()
	switch {
	case !r.Changed && len(r.Skipped) > 0:
		say("nothing %s: every path that differs was skipped (above)", map[string]string{"rewind": "rewound", "revert": "reverted"}[verb])
	case !r.Changed && verb == "revert":
		say("nothing to revert: the files turn %d changed already hold what they held before it", r.Turn)
	case !r.Changed:
		say("nothing to %s: the files already match %s", verb, PointName(r.point()))
	case verb == "revert" && r.DryRun:
		say("dry run: nothing changed; reverting turn %d would do the above%s", r.Turn, counts)
	case verb == "revert":
		say("reverted turn %d%s (undo with `ckpt undo`)", r.Turn, counts)
	case r.DryRun:
		say("dry run: nothing changed; rewinding %s to %s would do the above%s", what, PointName(r.point()), counts)
	default:
		say("rewound %s to %s%s (undo with `ckpt undo`)", what, PointName(r.point()), counts)
	}
	if controller.Scope(r.Scope).Conversation() && verb == "rewind" {
		if !r.DryRun {
			say("conversation cut before turn %d; its prompt, to edit and resend:", r.Turn)
		}
		fmt.Fprintln(out, r.Prompt)
	}
	return r.Incomplete(verb)
}

// WriteReversal writes an undo's or (redo) a redo's result for people:
// what changed on msgs, and the prompt a redone conversation cut hands
// back on out. op is the op asked for (0: the next one). It returns what
// Incomplete says of the result.
func (r Result) WriteReversal(out, msgs io.Writer, redo bool, op int64) error {
	say := sayer(msgs)
	verb, other := "undo", "redo"
	if redo {
		verb, other = "redo", "undo"
	}
	r.WriteFiles(msgs, msgs)
	for _, p := range r.Conflicts {
		if r.DryRun {
			say("  changed since: %s", quote.Path(p))
		} else { // forced: what it overwrote is this op's before state
			say("  overwrote %s (kept: `ckpt %s` brings it back)", quote.Path(p), other)
		}
	}
	what := fmt.Sprintf("turn %d, %s", r.Turn, r.Scope)
	switch r.Of {
	case "summarize":
		what = fmt.Sprintf("the summary at turn %d", r.Turn)
	case "revert":
		what = fmt.Sprintf("the revert of turn %d", r.Turn)
	case "rewind":
		what = fmt.Sprintf("the rewind of %s to %s", r.Scope, PointName(r.point()))
	}
	counts := r.fileCounts()
	switch {
	case !r.Changed && redo:
		say("nothing to redo: what op %d did is there already", op)
	case !r.Changed:
		say("nothing to undo: the state before op %d is there already", op)
	case r.DryRun && len(r.Conflicts) > 0:
		say("dry run: nothing changed; %s (%s) would do the above%s, and needs --force to overwrite what changed since", verb, what, counts)
	case r.DryRun:
		say("dry run: nothing changed; %s (%s) would do the above%s", verb, what, counts)
	case redo:
		say("redone (%s)%s; `ckpt undo` reverses it, `ckpt history` lists every op", what, counts)
	default:
		say("undone (%s)%s; `ckpt %s` re-applies it, `ckpt history` lists every op", what, counts, other)
	}
	if r.Prompt != "" && controller.Scope(r.Scope).Conversation() {
		if !r.DryRun {
			say("conversation cut before turn %d again; its prompt, to edit and resend:", r.Turn)
		}
		fmt.Fprintln(out, r.Prompt)
	}
	return r.Incomplete(verb)
}
