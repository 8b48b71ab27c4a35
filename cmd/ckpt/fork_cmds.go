package main

import (
	"fmt"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

type forkOptions struct {
	to             string
	restore, force bool
}

func newForkCmd(a *app) *cobra.Command {
	var o forkOptions
	cmd := &cobra.Command{
		Use:   "fork TURN",
		Short: "Start a new session from the start of TURN; this one is untouched",
		Long: `Create a new session in the same store whose conversation is this session's
history before TURN, sharing its checkpoints (no file contents are copied).
The new session's id goes to stdout; continue in it with --session ID.
TURN's prompt is handed back, as by a conversation rewind, and the fork's next
turn gets number TURN. With --restore the files are also put back to the start
of TURN, in the fork (undoable there with "ckpt --session ID undo").

The default id is "<session>-fork-<n>"; --to names it.`,
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := parseTurn(args[0])
			if err != nil {
				return err
			}
			return runFork(cmd, a, turn, o)
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "id of the new session (default <session>-fork-<n>)")
	cmd.Flags().BoolVar(&o.restore, "restore", false, "also restore the files to the start of TURN")
	cmd.Flags().BoolVar(&o.force, "force", false, "with --restore: overwrite files changed since the agent left them")
	return cmd
}

func runFork(cmd *cobra.Command, a *app, turn int, o forkOptions) error {
	if o.to != "" && !controller.ValidSession(o.to) {
		return usageError{fmt.Errorf("--to %q: %w", o.to, controller.ErrBadSession)}
	}
	c, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer a.closeController(c)
	res, err := c.Fork(cmd.Context(), turn, controller.ForkOptions{To: o.to, Restore: o.restore, Force: o.force})
	if err != nil {
		return err
	}
	rw := res.Rewind
	if a.json {
		return a.printJSON(wire.NewFork(c.Session(), turn, res))
	}
	for _, p := range rw.Restored {
		a.say("  restore %s", quote.Path(p))
	}
	for _, p := range rw.Deleted {
		a.say("  delete  %s", quote.Path(p))
	}
	for _, s := range rw.Skipped {
		a.say("  skip    %s: %s", quote.Path(s.Path), s.Reason)
	}
	a.say("forked session %s from %s before turn %d; continue with --session %s", res.Session, c.Session(), turn, res.Session)
	a.say("turn %d's prompt, to edit and resend: %s", turn, rw.Prompt)
	_, err = a.stdout.Write([]byte(res.Session + "\n"))
	return err
}

type summarizeOptions struct {
	from, upTo bool
	text       string
}

func newSummarizeCmd(a *app) *cobra.Command {
	var o summarizeOptions
	cmd := &cobra.Command{
		Use:   "summarize TURN (--from | --up-to) --text TEXT",
		Short: "Replace the conversation from TURN on, or before TURN, with one summary",
		Long: `Replace part of the active conversation with one system message holding TEXT
(ckpt calls no model: the summary is yours). --from replaces the messages of
TURN and every later turn; --up-to those of the turns before TURN. Turns and
file checkpoints stay as they are, and "ckpt undo" brings the messages back
exactly.`,
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := parseTurn(args[0])
			if err != nil {
				return err
			}
			if o.from == o.upTo {
				return usagef("summarize takes exactly one of --from and --up-to")
			}
			if !cmd.Flags().Changed("text") {
				return usagef("summarize needs --text TEXT")
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.closeController(c)
			res, err := c.Summarize(cmd.Context(), turn, o.upTo, o.text)
			if err != nil {
				return err
			}
			if a.json {
				j := resultJSON(res)
				j.Prompt = "" // a summarize keeps its text in the op, not a prompt to hand back
				return a.printJSON(j)
			}
			what := map[bool]string{false: "from", true: "before"}[o.upTo]
			a.say("summarized the conversation %s turn %d (undo with `ckpt undo`)", what, turn)
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.from, "from", false, "replace the messages of TURN and later turns")
	cmd.Flags().BoolVar(&o.upTo, "up-to", false, "replace the messages of the turns before TURN")
	cmd.Flags().StringVar(&o.text, "text", "", "the summary")
	return cmd
}
