package main

import (
	"fmt"
	"strconv"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

// undoOptions are the flags of undo and redo.
type undoOptions struct {
	force, dryRun bool
	op            string
	opID          int64 // op parsed, by runReverse
}

func (o *undoOptions) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.force, "force", false, "")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "")
	cmd.Flags().StringVar(&o.op, "op", "", "")
}

func newUndoCmd(a *app) *cobra.Command {
	var o undoOptions
	cmd := &cobra.Command{
		Use:  "undo",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReverse(cmd, a, o, false)
		},
	}
	o.flags(cmd)
	return cmd
}

func newRedoCmd(a *app) *cobra.Command {
	var o undoOptions
	cmd := &cobra.Command{
		Use:  "redo",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReverse(cmd, a, o, true)
		},
	}
	o.flags(cmd)
	return cmd
}

func runReverse(cmd *cobra.Command, a *app, o undoOptions, redo bool) error {
	if cmd.Flags().Changed("op") {
		id, err := strconv.ParseInt(o.op, 10, 64)
		if err != nil || id <= 0 {
			return usagef("--op must be an op ID from ckpt history (a whole number ≥ 1), got %q", o.op)
		}
		o.opID = id
	}
	c, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	uo := controller.RewindOptions{DryRun: o.dryRun, Force: o.force, Op: o.opID}
	var res controller.Result
	if redo {
		res, err = c.Redo(cmd.Context(), uo)
	} else {
		res, err = c.Undo(cmd.Context(), uo)
	}
	if err != nil {
		return a.refused(res, err)
	}
	return a.printReversal(res, redo, o.opID)
}

// printReversal prints an undo or redo result: JSON (the rewind form), or
// what changed on stderr, and the prompt a redone conversation cut hands
// back on stdout.
func (a *app) printReversal(res controller.Result, redo bool, op int64) error {
	verb, other := "undo", "redo"
	if redo {
		verb, other = "redo", "undo"
	}
	if a.json {
		return a.printResultJSON(res, verb)
	}
	a.printFiles(res, a.say)
	for _, p := range res.Conflicts {
		if res.DryRun {
			a.say("  changed since: %s", quote.Path(p))
		} else { // forced: what it overwrote is this op's before state
			a.say("  overwrote %s (kept: `ckpt %s` brings it back)", quote.Path(p), other)
		}
	}
	what := fmt.Sprintf("turn %d, %s", res.Turn, res.Scope)
	switch res.Of {
	case "summarize":
		what = fmt.Sprintf("the summary at turn %d", res.Turn)
	case "revert":
		what = fmt.Sprintf("the revert of turn %d", res.Turn)
	case "rewind":
		what = fmt.Sprintf("the rewind of %s to %s", res.Scope, pointName(point(res)))
	}
	counts := fileCounts(res)
	switch {
	case !res.Changed && redo:
		a.say("nothing to redo: what op %d did is there already", op)
	case !res.Changed:
		a.say("nothing to undo: the state before op %d is there already", op)
	case res.DryRun && len(res.Conflicts) > 0:
		a.say("dry run: nothing changed; %s (%s) would do the above%s, and needs --force to overwrite what changed since", verb, what, counts)
	case res.DryRun:
		a.say("dry run: nothing changed; %s (%s) would do the above%s", verb, what, counts)
	case redo:
		a.say("redone (%s)%s; `ckpt undo` reverses it, `ckpt history` lists every op", what, counts)
	default:
		a.say("undone (%s)%s; `ckpt %s` re-applies it, `ckpt history` lists every op", what, counts, other)
	}
	if res.Prompt != "" && res.Scope.Conversation() {
		if !res.DryRun {
			a.say("conversation cut before turn %d again; its prompt, to edit and resend:", res.Turn)
		}
		fmt.Fprintln(a.stdout, res.Prompt)
	}
	return incomplete(res, verb)
}
