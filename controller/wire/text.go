package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/ckpt/ckpt/internal/units"
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

// sessionRow lays out one line of the sessions table. Session ids from
// Claude Code are 36-character UUIDs.
const sessionRow = "%-36s %5s %10s %10s  %-19s  %s\n"

// sessionLine is session i's line of the table, its first column name.
func sessionLine(name string, i Session) string {
	if i.Error != "" {
		return fmt.Sprintf(sessionRow, name, "?", "?", "?", "?", "unreadable: "+strings.ReplaceAll(i.Error, "\n", "; "))
	}
	last, shared := "-", "-"
	if !i.LastUse.IsZero() {
		last = i.LastUse.Local().Format("2006-01-02 15:04:05")
	}
	if i.SharedBytes > 0 {
		shared = units.FormatBytes(i.SharedBytes)
	}
	return fmt.Sprintf(sessionRow, name, fmt.Sprint(i.Turns), units.FormatBytes(i.Bytes), shared, last, quote.Path(i.Workspace))
}

// WriteSessions writes the sessions table for people (`ckpt sessions`)
// on out: a header, then a line per session, in the order of infos; with
// tree, the session tree (NewSessionTree), each fork under its parent. A
// warning on msgs says how many sessions have an unreadable index.
func WriteSessions(out, msgs io.Writer, infos []controller.SessionInfo, tree bool) error {
	b := bufio.NewWriter(out)
	fmt.Fprintf(b, sessionRow, "SESSION", "TURNS", "OWN SIZE", "SHARED", "LAST USE", "WORKSPACE")
	if tree {
		EachLine(NewSessionTree(infos), func(name string, s Session) { fmt.Fprint(b, sessionLine(name, s)) })
	} else {
		for _, i := range infos {
			fmt.Fprint(b, sessionLine(i.ID, NewSession(i)))
		}
	}
	if err := b.Flush(); err != nil {
		return err
	}
	bad := 0
	for _, i := range infos {
		if i.Error != "" {
			bad++
		}
	}
	if bad > 0 {
		fmt.Fprintf(msgs, "warning: %d session(s) have an unreadable index; `ckpt sessions rm ID --force` removes one\n", bad)
	}
	return nil
}

// WriteHistory writes the journal h as a table for people (`ckpt
// history`): a line per op, what it did, where it stands, whether a plain
// undo or redo acts on it, and what it changed.
func WriteHistory(w io.Writer, h []HistoryEntry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tOP\tSTATE\tNEXT\tCHANGED")
	for _, e := range h {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Time.Local().Format("2006-01-02 15:04:05"),
			e.Op(), e.Status(), historyNext(e), msg.Shorten(historyChanged(e), 60))
	}
	return tw.Flush()
}

// historyNext says which of a plain undo and redo acts on e.
func historyNext(e HistoryEntry) string {
	var n []string
	if e.NextUndo {
		n = append(n, "undo")
	}
	if e.NextRedo {
		n = append(n, "redo")
	}
	return strings.Join(n, ",")
}

// historyChanged says what e changed: its files, and the turns it hid
// and showed.
func historyChanged(e HistoryEntry) string {
	parts := make([]string, 0, len(e.Paths)+2)
	for _, p := range e.Paths {
		parts = append(parts, quote.Path(p))
	}
	if len(e.HiddenTurns) > 0 {
		parts = append(parts, "hid turns "+ints(e.HiddenTurns))
	}
	if len(e.ShownTurns) > 0 {
		parts = append(parts, "showed turns "+ints(e.ShownTurns))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// ints is xs, space-separated.
func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

// WriteChanges writes the open turn's changes for people (`ckpt
// status`), a line each: a mark (+ added, ~ modified, - deleted, ! no
// longer a file, ? unreadable) and the path, with what a path that is no
// longer a file is now.
func WriteChanges(w io.Writer, changes []Change) {
	for _, ch := range changes {
		mark := map[string]string{"added": "+", "modified": "~", "deleted": "-", "type_changed": "!", "unreadable": "?"}[ch.Kind]
		if ch.Kind == "unreadable" {
			fmt.Fprintf(w, "%s %s (unreadable: changed or not, ckpt cannot tell)\n", mark, quote.Path(ch.Path))
			continue
		}
		if ch.Now != "" {
			fmt.Fprintf(w, "%s %s (now a %s)\n", mark, quote.Path(ch.Path), ch.Now)
			continue
		}
		fmt.Fprintf(w, "%s %s\n", mark, quote.Path(ch.Path))
	}
}

// WriteMessages writes the conversation for people (`ckpt log`), a
// message a line (its later lines indented): its turn, its role, its text.
func WriteMessages(w io.Writer, msgs []Message) {
	for _, m := range msgs {
		text := strings.ReplaceAll(m.Text, "\n", "\n"+strings.Repeat(" ", 16))
		fmt.Fprintf(w, "[%d] %-11s %s\n", m.Turn, m.Role+":", text)
	}
}

// WriteDiff writes what a code rewind to pt would change for people
// (`ckpt diff`): on out each file's git-style diff, on msgs the paths it
// would skip and, when it would restore nothing or skip some, a line
// saying so.
func WriteDiff(out, msgs io.Writer, pt controller.Target, diffs []controller.FileDiff, skipped []controller.Skip) {
	say := sayer(msgs)
	for _, d := range NewDiff(pt, diffs, skipped).Files {
		// A git-style header: the path, and mode lines when the
		// mode changes (old mode 100644 / new mode 100755).
		fmt.Fprintf(out, "diff --git %s %s\n%s", quote.Path("a/"+d.Path), quote.Path("b/"+d.Path), d.Header())
		switch {
		case d.Unified != "":
			fmt.Fprint(out, d.Unified)
		case d.Note != "":
			fmt.Fprintf(out, "%s %s: %s\n", d.Action, quote.Path(d.Path), d.Note)
		}
	}
	for _, s := range skipped {
		say("skip %s: %s", quote.Path(s.Path), s.Reason)
	}
	switch {
	case len(diffs) == 0 && len(skipped) > 0:
		say("rewinding code to %s would restore nothing: every path that differs would be skipped (above)", PointName(pt))
	case len(diffs) == 0:
		say("rewinding code to %s would change nothing", PointName(pt))
	case len(skipped) > 0:
		say("rewinding code to %s would leave %d path(s) as they are (above)", PointName(pt), len(skipped))
	}
}

// WriteFork writes what a fork of session from before turn did for people
// (`ckpt fork`): on msgs the files it put back (WriteFiles), the new
// session and the prompt handed back; on out the new session's id alone.
func WriteFork(out, msgs io.Writer, from string, turn int, res controller.Result) error {
	say := sayer(msgs)
	NewResult(res).WriteFiles(msgs, msgs)
	say("forked session %s from %s before turn %d; continue with --session %s", res.Session, from, turn, res.Session)
	if res.Prompt != "" { // not a fork after the last turn
		say("turn %d's prompt, to edit and resend: %s", turn, res.Prompt)
	}
	_, err := io.WriteString(out, res.Session+"\n")
	return err
}
