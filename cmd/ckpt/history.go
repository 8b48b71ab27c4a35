package main

import (
	"errors"

	"github.com/ckpt/ckpt/controller/wire"
	"github.com/spf13/cobra"
)

func newHistoryCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "history",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.open(cmd.Context())
			if errors.As(err, new(noSessionYet)) {
				return a.emptyList(err)
			}
			if err != nil {
				return err
			}
			defer c.Close()
			h, err := c.History(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(wire.NewHistory(h))
			}
			if len(h) == 0 {
				a.say("no rewinds yet: nothing to undo or redo")
				return nil
			}
			return wire.WriteHistory(a.stdout, wire.NewHistory(h))
		},
	}
}
