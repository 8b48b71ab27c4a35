package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
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
			w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tTIME\tOP\tSTATE\tNEXT\tCHANGED")
			for _, e := range wire.NewHistory(h) {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Time.Local().Format("2006-01-02 15:04:05"),
					e.Op(), e.Status(), historyNext(e), msg.Shorten(historyChanged(e), 60))
			}
			return w.Flush()
		},
	}
}

func historyNext(e wire.HistoryEntry) string {
	var n []string
	if e.NextUndo {
		n = append(n, "undo")
	}
	if e.NextRedo {
		n = append(n, "redo")
	}
	return strings.Join(n, ",")
}

func historyChanged(e wire.HistoryEntry) string {
	parts := make([]string, 0, len(e.Paths)+2)
	for _, p := range e.Paths {
		parts = append(parts, quote.Path(p))
	}
	if len(e.HiddenTurns) > 0 {
		parts = append(parts, "hid turns "+ints(e.HiddenTurns))
	}
	if len(e.ShownTurns) > 0 {
		parts = append(parts, "showed turns "+ints(e.ShownTurns))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
