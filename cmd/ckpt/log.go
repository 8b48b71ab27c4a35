package main

import (
	"context"
	"errors"

	"github.com/ckpt/ckpt/controller/wire"
	"github.com/spf13/cobra"
)

func newLogCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "log",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runLog(cmd.Context())
		},
	}
}

// runLog prints the active conversation.
func (a *app) runLog(ctx context.Context) error {
	c, err := a.open(ctx)
	if errors.As(err, new(noSessionYet)) {
		return a.emptyList(err)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	msgs, err := c.Conversation(ctx)
	if err != nil {
		return err
	}
	out := wire.NewMessages(msgs)
	if a.json {
		return a.printJSON(out)
	}
	if len(out) == 0 {
		a.say("the conversation is empty")
	}
	wire.WriteMessages(a.stdout, out)
	return nil
}
