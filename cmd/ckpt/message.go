package main

import (
	"context"

	"github.com/spf13/cobra"
)

// messageOptions are message's arguments.
type messageOptions struct {
	role, text string
}

func newMessageCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "message ROLE TEXT|-",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("message takes ROLE and TEXT (see ckpt message --help)")
			}
			switch args[0] {
			case "user", "assistant", "tool", "system":
				return nil
			}
			return usagef("role must be user, assistant, tool or system, got %q", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := a.textArg(args[1:], "the message")
			if err != nil {
				return err
			}
			return a.runMessage(cmd.Context(), messageOptions{role: args[0], text: text})
		},
	}
}

// runMessage appends a message to the open turn.
func (a *app) runMessage(ctx context.Context, o messageOptions) error {
	c, err := a.openRecord(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	m, err := c.AppendMessage(ctx, o.role, o.text)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(map[string]any{"turn": m.Turn, "role": m.Role})
	}
	return nil
}
