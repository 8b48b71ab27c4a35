package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/picker"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

// rewindJSON is the document of a rewind, revert, undo or redo: package
// wire's result, and for a conversation rewind of a Claude Code session
// the command that gives Claude's own conversation back.
type rewindJSON struct {
	wire.Result
	ClaudeResume *hook.Resume `json:"claude_resume,omitempty"`
}

// rewindOptions are rewind's flags.
type rewindOptions struct {
	scope                             string
	dryRun, force, only, resumeClaude bool
}

func newRewindCmd(a *app) *cobra.Command {
	var o rewindOptions
	cmd := &cobra.Command{
		Use: "rewind TURN[.STEP] [-- CLAUDE-ARGS]",
		Args: func(cmd *cobra.Command, args []string) error {
			return o.checkArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runRewind(cmd, args, o)
		},
	}
	cmd.Flags().StringVar(&o.scope, "scope", "both", "")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "")
	cmd.Flags().BoolVar(&o.force, "force", false, "")
	cmd.Flags().BoolVar(&o.only, "only", false, "")
	cmd.Flags().BoolVar(&o.resumeClaude, "resume-claude", false, "")
	return cmd
}

// checkArgs checks rewind's arguments: TURN (none on a terminal), the
// PATHs of --only, claude's arguments after -- with --resume-claude.
func (o rewindOptions) checkArgs(cmd *cobra.Command, args []string) error {
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		if !o.resumeClaude {
			return usagef("arguments after -- are for claude, with --resume-claude")
		}
		args = args[:dash]
	}
	if o.only && len(args) < 2 {
		return usagef("rewind TURN --only takes one or more PATHs")
	}
	if !o.only && len(args) > 1 {
		return usagef("rewind takes one TURN (see ckpt rewind --help)")
	}
	return nil
}

// target reads the rewind point and its scope: code for a step or --only
// unless --scope says otherwise, and only code for a step.
func (o rewindOptions) target(cmd *cobra.Command, arg string) (controller.Target, controller.Scope, error) {
	pt, err := parsePoint(arg)
	if err != nil {
		return pt, "", err
	}
	scope := o.scope
	if (pt.Step > 0 || o.only) && !cmd.Flags().Changed("scope") {
		scope = string(controller.ScopeCode) // files, not the conversation
	}
	var sc controller.Scope
	if err := sc.UnmarshalText([]byte(scope)); err != nil {
		return pt, "", usageError{err}
	}
	if pt.Step > 0 && sc != controller.ScopeCode {
		return pt, "", usagef("rewind %s --scope %s: %s", pt, sc, controller.ErrStepScope)
	}
	if pt.Step > 0 && o.resumeClaude {
		return pt, "", usagef("--resume-claude goes with a conversation rewind of a turn, not a step")
	}
	if o.dryRun && o.resumeClaude {
		return pt, "", usagef("--resume-claude with --dry-run: nothing would be rewound, so nothing to resume")
	}
	return pt, sc, nil
}

// runRewind rewinds to the TURN or TURN.STEP given, or on a terminal
// without one to the turn picked.
func (a *app) runRewind(cmd *cobra.Command, args []string, o rewindOptions) error {
	var claudeArgs []string
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		args, claudeArgs = args[:dash], args[dash:]
	}
	if len(args) == 0 {
		if !a.interactive() {
			return usagef("rewind takes one TURN; run it on a terminal without TURN to pick one interactively")
		}
		return runPicker(cmd, a)
	}
	pt, sc, err := o.target(cmd, args[0])
	if err != nil {
		return err
	}
	c, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	ro := controller.RewindOptions{DryRun: o.dryRun, Force: o.force}
	if o.only {
		if ro.Only, err = absPaths(args[1:]); err != nil {
			return err
		}
	}
	// For a Claude Code session, how to give Claude's own conversation
	// back, settled before anything changes.
	claude, err := hook.PlanRewind(cmd.Context(), a.store, c, pt.Turn, sc.Conversation() && !o.only, hook.ResumeOptions{
		DryRun: o.dryRun, Run: o.resumeClaude, Bin: os.Getenv("CKPT_CLAUDE_BIN"), Interactive: a.interactive(), Extra: claudeArgs, Say: a.say})
	if err != nil {
		return err
	}
	res, err := c.Rewind(cmd.Context(), pt, sc, ro)
	if err != nil {
		if claude != nil {
			claude.Cancel()
		}
		return a.refused(res, err)
	}
	if claude == nil {
		return a.printResult(res, "rewind")
	}
	return a.claudeRewound(cmd.Context(), res, claude)
}

// runPicker is rewind without TURN on a terminal: package picker asks
// which turn or step, the scope and a confirmation, then the rewind runs
// after the TUI has closed and its result is printed exactly as `ckpt
// rewind TURN` prints it.
func runPicker(cmd *cobra.Command, a *app) error {
	ctx := cmd.Context()
	in, okIn := a.stdin.(*os.File)
	out, okOut := a.stdout.(*os.File)
	if !okIn || !okOut {
		return usagef("rewind takes one TURN; run it on a terminal without TURN to pick one interactively")
	}
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{})
	if err != nil {
		return err
	}
	if len(cps) == 0 {
		return errors.New("no turns to rewind to: open one with `ckpt turn PROMPT`")
	}
	ch, ok, err := picker.Run(ctx, c, cps, in, out)
	if err != nil {
		return err
	}
	if !ok {
		a.say("cancelled, nothing changed")
		return nil
	}
	res, err := c.Rewind(ctx, ch.Point, ch.Scope, controller.RewindOptions{Force: ch.Force})
	if err != nil {
		// A file changed between the preview and the rewind: refused
		// with the list, as `ckpt rewind TURN` is.
		return a.refused(res, err)
	}
	return a.printResult(res, "rewind")
}

// point is where a rewind result went.
func point(res controller.Result) controller.Target {
	return controller.Target{Turn: res.Turn, Step: res.Step}
}

// pointName says a rewind point for people: "turn 3", or "turn 3 before
// tool call 2".
func pointName(p controller.Target) string {
	if p.Step == 0 {
		return fmt.Sprintf("turn %d", p.Turn)
	}
	return fmt.Sprintf("turn %d before tool call %d (%s)", p.Turn, p.Step, p)
}

// absPaths makes command-line paths absolute (relative to the current
// directory, like every other tool).
func absPaths(paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out[i] = abs
	}
	return out, nil
}

func newRevertCmd(a *app) *cobra.Command {
	var dryRun, force bool
	cmd := &cobra.Command{
		Use:  "revert TURN",
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := parseTurn(args[0])
			if err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Revert(cmd.Context(), turn, controller.RewindOptions{DryRun: dryRun, Force: force})
			if err != nil {
				return a.refused(res, err)
			}
			return a.printResult(res, "revert")
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "")
	cmd.Flags().BoolVar(&force, "force", false, "")
	return cmd
}

// interactive reports whether stdin and stdout are both terminals.
func (a *app) interactive() bool {
	in, ok1 := a.stdin.(*os.File)
	out, ok2 := a.stdout.(*os.File)
	return ok1 && ok2 && isatty.IsTerminal(in.Fd()) && isatty.IsTerminal(out.Fd())
}

// resultJSON is the JSON document of a rewind, undo or revert result.
func resultJSON(res controller.Result) rewindJSON { return rewindJSON{Result: wire.NewResult(res)} }

// refused reports a rewind, revert, undo or redo that failed: for a
// conflict, the files changed since the agent left them (or since the op
// being reversed) are the data, so --json prints the result with them on
// stdout (as the HTTP API's 409 does); the error, which names them, still
// exits 1.
func (a *app) refused(res controller.Result, err error) error {
	if !errors.Is(err, controller.ErrConflict) {
		return err
	}
	if a.json {
		if perr := a.printJSON(resultJSON(res)); perr != nil {
			return perr
		}
	}
	return err
}

// errIncomplete is returned (exit 1, after the result is printed) by a
// rewind, revert, undo or redo that left paths it meant to change as they
// are: they are listed as skipped, with the reason.
var errIncomplete = errors.New("left as they are (see skipped)")

// incomplete returns the error a result with skipped paths ends with, or
// nil: a dry run changes nothing, so its skips are part of its plan.
func incomplete(res controller.Result, verb string) error {
	if res.DryRun || len(res.Skipped) == 0 {
		return nil
	}
	paths := make([]string, len(res.Skipped))
	for i, s := range res.Skipped {
		paths[i] = quote.Path(s.Path)
	}
	return fmt.Errorf("%s incomplete: %d path(s) %w: %s", verb, len(paths), errIncomplete, strings.Join(paths, ", "))
}

// printResult prints a rewind or revert result: JSON, or a summary on
// stderr with the handed-back prompt on stdout. A dry run's plan is the
// command's data, so its lines go to stdout. It returns errIncomplete when
// paths were skipped: the rest was done, but not all the command was asked.
func (a *app) printResult(res controller.Result, verb string) error {
	if a.json {
		return a.printResultJSON(res, verb)
	}
	plan := a.say
	if res.DryRun {
		plan = func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }
	}
	a.printFiles(res, plan)
	for _, p := range res.Conflicts {
		a.say("  changed since the agent: %s", quote.Path(p))
	}
	for _, p := range res.NotRecorded {
		a.say("  not recorded: %s (never captured or scanned at or after turn %d; left alone)", quote.Path(p), res.Turn)
	}
	what := map[controller.Scope]string{
		controller.ScopeCode:         "code",
		controller.ScopeConversation: "conversation",
		controller.ScopeBoth:         "code and conversation",
	}[res.Scope]
	counts := fileCounts(res)
	switch {
	case !res.Changed && len(res.Skipped) > 0:
		a.say("nothing %s: every path that differs was skipped (above)", map[string]string{"rewind": "rewound", "revert": "reverted"}[verb])
	case !res.Changed && verb == "revert":
		a.say("nothing to revert: the files turn %d changed already hold what they held before it", res.Turn)
	case !res.Changed:
		a.say("nothing to %s: the files already match %s", verb, pointName(point(res)))
	case verb == "revert" && res.DryRun:
		a.say("dry run: nothing changed; reverting turn %d would do the above%s", res.Turn, counts)
	case verb == "revert":
		a.say("reverted turn %d%s (undo with `ckpt undo`)", res.Turn, counts)
	case res.DryRun:
		a.say("dry run: nothing changed; rewinding %s to %s would do the above%s", what, pointName(point(res)), counts)
	default:
		a.say("rewound %s to %s%s (undo with `ckpt undo`)", what, pointName(point(res)), counts)
	}
	if res.Scope.Conversation() && verb == "rewind" {
		if !res.DryRun {
			a.say("conversation cut before turn %d; its prompt, to edit and resend:", res.Turn)
		}
		fmt.Fprintln(a.stdout, res.Prompt)
	}
	return incomplete(res, verb)
}

// printResultJSON prints a rewind, revert, undo or redo result as JSON,
// then returns what incomplete says of it.
func (a *app) printResultJSON(res controller.Result, verb string) error {
	if err := a.printJSON(resultJSON(res)); err != nil {
		return err
	}
	return incomplete(res, verb)
}

// printFiles lists what a result restores and deletes with plan, and
// what it skips on stderr.
func (a *app) printFiles(res controller.Result, plan func(format string, args ...any)) {
	would := ""
	if res.DryRun {
		would = "would "
	}
	for _, p := range res.Restored {
		plan("  %srestore %s", would, quote.Path(p))
	}
	for _, p := range res.Deleted {
		plan("  %sdelete  %s", would, quote.Path(p))
	}
	for _, s := range res.Skipped {
		a.say("  skip    %s: %s", quote.Path(s.Path), s.Reason)
	}
}

// fileCounts says what a result does to files, ": 2 restored, 1 deleted",
// or nothing when it leaves the code alone.
func fileCounts(res controller.Result) string {
	if !res.Scope.Code() {
		return ""
	}
	return ": " + wire.NewResult(res).Counts()
}
