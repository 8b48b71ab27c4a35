package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newTurnCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "turn PROMPT",
		Short: "Open the next turn with the user's prompt; prints its number",
		Long: `Open the next turn. PROMPT is the user's message that starts it; it is recorded
as the turn's first message and handed back by a conversation rewind.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("turn takes a PROMPT (see ckpt turn --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			cp, err := c.BeginTurn(cmd.Context(), strings.Join(args, " "))
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]int{"turn": cp.Turn})
			}
			fmt.Fprintln(a.stdout, cp.Turn)
			return nil
		},
	}
}
