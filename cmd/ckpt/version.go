package main

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "version",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version.Read()
			if a.json {
				return a.printJSON(v)
			}
			fmt.Fprintln(a.stdout, "ckpt "+v.String())
			return nil
		},
	}
}
