package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/picker"
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
	ch, ok, err := picker.Run(ctx, c, in, out)
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
			res, err := c.Rewind(cmd.Context(), controller.Target{Turn: turn}, controller.ScopeCode, controller.RewindOptions{DryRun: dryRun, Force: force, Revert: true})
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
func (a *app) interactive() bool { return terminal(a.stdin, false) && terminal(a.stdout, false) }

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

// printResult prints a rewind, revert, undo or redo result as JSON, or a
// rewind's or revert's for people as wire.Result.WriteText words it. It
// returns wire.ErrIncomplete's error when paths were skipped: the rest
// was done, but not all the command was asked.
func (a *app) printResult(res controller.Result, verb string) error {
	r := wire.NewResult(res)
	if !a.json {
		return r.WriteText(a.stdout, a.stderr, verb)
	}
	if err := a.printJSON(rewindJSON{Result: r}); err != nil {
		return err
	}
	return r.Incomplete(verb)
}

// claudeRewound reports a conversation rewind of a Claude Code session
// with the command p planned (hook.PlanRewind), and runs it when p says
// to.
func (a *app) claudeRewound(ctx context.Context, res controller.Result, p *hook.RewindPlan) error {
	r := p.Resume
	// Paths the rewind skipped make it exit 1, once the command that
	// gives Claude's conversation back is printed (and run).
	skipped := wire.NewResult(res).Incomplete("rewind")
	if a.json {
		j := resultJSON(res)
		j.ClaudeResume = &r
		if err := a.printJSON(j); err != nil {
			return err
		}
	} else {
		if err := a.printResult(res, "rewind"); err != nil && !errors.Is(err, wire.ErrIncomplete) {
			return err
		}
		r.WriteText(a.stderr, res.Turn)
	}
	// On a terminal, the fork then takes it over (paths the rewind
	// skipped were listed above).
	if err := p.Run(ctx, a.stdin, a.stdout, a.stderr); err != nil {
		return err
	}
	return skipped
}
