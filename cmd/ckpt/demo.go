package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/internal/demo"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

func newDemoCmd(a *app) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:  "demo",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.json {
				return usagef("demo is a tour for people and has no --json output")
			}
			dir, err := os.MkdirTemp("", "ckpt-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			if err := demo.Play(cmd.Context(), a.stdout, dir, runDemoCmd); err != nil {
				return err
			}
			if keep {
				a.say("kept %s; explore it with: cd %s && ckpt --store %s list", dir,
					quote.Shell(filepath.Join(dir, "workspace")), quote.Shell(filepath.Join(dir, "store")))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "")
	return cmd
}

// runDemoCmd runs one of the demo's commands in this process, its output
// and messages both on out.
func runDemoCmd(ctx context.Context, args []string, out io.Writer) int {
	return run(ctx, args, strings.NewReader(""), out, out)
}
