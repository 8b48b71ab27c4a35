package main

import (
	"github.com/ckpt/ckpt/controller"
	"github.com/spf13/cobra"
)

func newUndoCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "undo",
		Short: "Reverse the last rewind; repeat to walk further back",
		Long: `Reverse the most recent rewind that is not undone yet: the files it changed get
back the exact bytes they had just before it, and its conversation cut is
reverted. Run it again to undo the rewind before that.

If work was done since the rewind (a file it would overwrite changed, or
turns were opened since a conversation rewind), undo refuses and names it;
--force undoes anyway (what it overwrites stays in ckpt's undo record).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Undo(cmd.Context(), controller.UndoOptions{Force: force})
			if err != nil {
				return err
			}
			return a.printResult(res, "undo")
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "undo even if it overwrites work done since the rewind")
	return cmd
}
