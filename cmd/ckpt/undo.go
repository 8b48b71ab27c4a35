package main

import (
	"strconv"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/spf13/cobra"
)

// undoOptions are the flags of undo and redo.
type undoOptions struct {
	force, dryRun bool
	op            string
	opID          int64 // op parsed, by runReverse
}

func (o *undoOptions) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.force, "force", false, "")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "")
	cmd.Flags().StringVar(&o.op, "op", "", "")
}

func newUndoCmd(a *app) *cobra.Command {
	var o undoOptions
	cmd := &cobra.Command{
		Use:  "undo",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReverse(cmd, a, o, false)
		},
	}
	o.flags(cmd)
	return cmd
}

func newRedoCmd(a *app) *cobra.Command {
	var o undoOptions
	cmd := &cobra.Command{
		Use:  "redo",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReverse(cmd, a, o, true)
		},
	}
	o.flags(cmd)
	return cmd
}

func runReverse(cmd *cobra.Command, a *app, o undoOptions, redo bool) error {
	if cmd.Flags().Changed("op") {
		id, err := strconv.ParseInt(o.op, 10, 64)
		if err != nil || id <= 0 {
			return usagef("--op must be an op ID from ckpt history (a whole number ≥ 1), got %q", o.op)
		}
		o.opID = id
	}
	c, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	uo := controller.RewindOptions{DryRun: o.dryRun, Force: o.force, Op: o.opID}
	var res controller.Result
	if redo {
		res, err = c.Redo(cmd.Context(), uo)
	} else {
		res, err = c.Undo(cmd.Context(), uo)
	}
	switch {
	case err != nil:
		return a.refused(res, err)
	case a.json: // the rewind form
		return a.printResult(res, map[bool]string{false: "undo", true: "redo"}[redo])
	}
	return wire.NewResult(res).WriteReversal(a.stdout, a.stderr, redo, o.opID)
}
