package main

import (
	"fmt"

	"github.com/ckpt/ckpt/controller"
	"github.com/spf13/cobra"
)

type stepJSON struct {
	Turn int    `json:"turn"`
	Step int    `json:"step"`
	Key  string `json:"key"`
	Tool string `json:"tool"`
}

func newStepCmd(a *app) *cobra.Command {
	var tool string
	cmd := &cobra.Command{
		Use: "step [KEY]",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("step takes at most one KEY (see ckpt step --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o := controller.StepOptions{Tool: tool}
			if len(args) == 1 {
				o.Key = args[0]
			}
			c, err := a.openRecord(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := c.BeginStep(cmd.Context(), o)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(stepJSON{Turn: st.Turn, Step: st.Number, Key: st.Key, Tool: st.Tool})
			}
			fmt.Fprintf(a.stdout, "%d.%d\n", st.Turn, st.Number)
			return nil
		},
	}
	cmd.Flags().StringVar(&tool, "tool", "", "")
	return cmd
}
