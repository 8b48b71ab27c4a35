package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	for _, m := range out {
		text := strings.ReplaceAll(m.Text, "\n", "\n"+strings.Repeat(" ", 16))
		fmt.Fprintf(a.stdout, "[%d] %-11s %s\n", m.Turn, m.Role+":", text)
	}
	return nil
}
