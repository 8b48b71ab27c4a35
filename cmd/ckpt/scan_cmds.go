package main

import (
	"errors"
	"fmt"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

func newScanCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "scan on|off|status",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || (args[0] != "on" && args[0] != "off" && args[0] != "status") {
				return usagef("scan takes on, off or status")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			open := a.open
			if args[0] != "status" {
				open = a.openRecord // a setting for the turns to come
			}
			c, err := open(cmd.Context())
			var on bool
			switch {
			case errors.As(err, new(noSessionYet)):
				// No session yet: the turns to come take the workspace's.
				def, _ := controller.OpenStore(a.store).WorkspaceScan(a.workspace, "") // reading cannot fail
				on = def == "on"
			case err != nil:
				return err
			default:
				defer c.Close()
				if args[0] != "status" {
					if err := c.SetMeta(cmd.Context(), "scan", args[0]); err != nil {
						return err
					}
				}
				scan, err := c.Meta(cmd.Context(), "scan")
				if err != nil {
					return err
				}
				on = scan == "on"
			}
			if a.json {
				return a.printJSON(map[string]bool{"scan": on})
			}
			fmt.Fprintf(a.stdout, "scan mode %s\n", map[bool]string{true: "on", false: "off"}[on])
			return nil
		},
	}
}

func newStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:  "status",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Said before the session is opened: where an agent started
			// here runs none of ckpt's hooks, there may be none.
			if a.locate(cmd.Context()) == nil {
				a.warnSubdir()
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if w := hook.ServerWarning(a.store, a.workspace); w != "" {
				a.say("ckpt: warning: %s", w)
			}
			changes, err := c.Status(cmd.Context())
			if err != nil {
				return err
			}
			a.say("ckpt: session %s of %s, store %s", c.Session(), quote.Path(c.WorkspaceRoot()), quote.Path(c.Store().Dir()))
			if a.json {
				return a.printJSON(wire.NewChanges(changes))
			}
			wire.WriteChanges(a.stdout, wire.NewChanges(changes))
			if len(changes) == 0 {
				a.say("nothing changed since the open turn started")
			}
			return nil
		},
	}
}
