package main

import "github.com/spf13/cobra"

func newUndoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "undo",
		Short: "Reverse the last rewind; repeat to walk further back",
		Long: `Reverse the most recent rewind that is not undone yet: the files it changed get
back the exact bytes they had just before it, and its conversation cut is
reverted. Run it again to undo the rewind before that.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Undo(cmd.Context())
			if err != nil {
				return err
			}
			return a.printResult(res, "undo")
		},
	}
}
