package main

import (
	"fmt"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/spf13/cobra"
)

type forkOptions struct {
	to             string
	restore, force bool
}

func newForkCmd(a *app) *cobra.Command {
	var o forkOptions
	cmd := &cobra.Command{
		Use:  "fork TURN",
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := parseTurn(args[0])
			if err != nil {
				return err
			}
			return runFork(cmd, a, turn, o)
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "")
	cmd.Flags().BoolVar(&o.restore, "restore", false, "")
	cmd.Flags().BoolVar(&o.force, "force", false, "")
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
	defer c.Close()
	res, err := c.Fork(cmd.Context(), turn, controller.ForkOptions{To: o.to, Restore: o.restore, Force: o.force})
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(wire.NewFork(c.Session(), turn, res))
	}
	a.printFiles(res, a.say)
	a.say("forked session %s from %s before turn %d; continue with --session %s", res.Session, c.Session(), turn, res.Session)
	if res.Prompt != "" { // not a fork after the last turn
		a.say("turn %d's prompt, to edit and resend: %s", turn, res.Prompt)
	}
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
		Use:  "summarize TURN (--from | --up-to) --text TEXT",
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
			defer c.Close()
			res, err := c.Summarize(cmd.Context(), turn, o.upTo, o.text)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(resultJSON(res))
			}
			what := map[bool]string{false: "from", true: "before"}[o.upTo]
			a.say("summarized the conversation %s turn %d (undo with `ckpt undo`)", what, turn)
			return nil
		},
	}
	cmd.Flags().BoolVar(&o.from, "from", false, "")
	cmd.Flags().BoolVar(&o.upTo, "up-to", false, "")
	cmd.Flags().StringVar(&o.text, "text", "", "")
	return cmd
}
