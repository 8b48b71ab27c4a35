package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/progress"
	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/retention"
	"github.com/spf13/cobra"
)

// openStore opens the store for store-wide commands, which need no
// workspace or session.
func (a *app) openStore() *controller.Store {
	st := controller.OpenStore(a.store)
	a.warnStore(st.Warning())
	return st
}

// policyFlags are the retention flags of prune (and gc's --grace); unset
// ones take the store's config.json (or the defaults).
type policyFlags struct {
	maxAge, maxBytes, grace string
	keep                    int
	cmd                     *cobra.Command
}

func (pf *policyFlags) add(cmd *cobra.Command) {
	pf.cmd = cmd
	cmd.Flags().StringVar(&pf.maxAge, "max-age", "", "")
	cmd.Flags().IntVar(&pf.keep, "keep", 0, "")
	cmd.Flags().StringVar(&pf.maxBytes, "max-bytes", "", "")
	cmd.Flags().StringVar(&pf.grace, "grace", "", "")
}

// check refuses, as a usage error naming the flag, a flag given with a
// value it cannot take: a negative count, an empty or negative size or age.
func (pf *policyFlags) check() error {
	changed := pf.cmd.Flags().Changed
	if changed("keep") && pf.keep < 0 {
		return usagef("--keep must be a number of turns ≥ 0 (0 keeps all), got %d", pf.keep)
	}
	for _, f := range [][2]string{{"max-age", pf.maxAge}, {"max-bytes", pf.maxBytes}, {"grace", pf.grace}} {
		_, err := units.ParseAge(f[1])
		if f[0] == "max-bytes" {
			_, err = units.ParseBytes(f[1])
		}
		if changed(f[0]) && err != nil {
			return usagef("--%s: %v", f[0], err)
		}
	}
	return nil
}

// options are the flags given, as Store.Retain's overrides of the store's
// policy.
func (pf *policyFlags) options() controller.RetainOptions {
	o := controller.RetainOptions{MaxAge: pf.maxAge, MaxBytes: pf.maxBytes, Grace: pf.grace}
	if pf.cmd.Flags().Changed("keep") {
		o.KeepTurns = &pf.keep
	}
	return o
}

func newPruneCmd(a *app) *cobra.Command {
	var pf policyFlags
	var dryRun bool
	cmd := &cobra.Command{
		Use:  "prune",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := pf.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			s := a.openStore()
			defer s.Close()
			o := pf.options()
			if cmd.Flags().Changed("session") || os.Getenv("CKPT_SESSION") != "" {
				var err error
				if o.Session, err = a.storeSession(ctx, a.session); err != nil {
					return err
				}
			}
			if dryRun {
				o.DryRun = true
				plan, _, err := s.Retain(ctx, o)
				if err != nil {
					return err
				}
				return a.printPlan(plan, nil)
			}
			bar := a.progress("collecting blobs", -1)
			o.Progress = bar.Count()
			plan, rep, err := s.Retain(ctx, o)
			bar.Done()
			if err != nil {
				return err
			}
			return a.printPlan(plan, &rep)
		},
	}
	pf.add(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "")
	cmd.RunE = withStoreHints(cmd.RunE)
	return cmd
}

func newSessionsRmCmd(a *app) *cobra.Command {
	var force, dryRun bool
	cmd := &cobra.Command{
		Use:  "rm ID",
		Args: exactArgs(1, "one session ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := args[0]
			if !controller.ValidSession(id) {
				return usageError{fmt.Errorf("session %q: %w", id, controller.ErrBadSession)}
			}
			s := a.openStore()
			defer s.Close()
			id, err := a.storeSession(ctx, id)
			if err != nil {
				return err
			}
			r, rep, err := s.RemoveSession(ctx, id, force, dryRun)
			if errors.Is(err, controller.ErrNotFound) {
				return fmt.Errorf("sessions rm: no session %s in the store", id)
			}
			if err != nil && !r.Removed {
				if r.Unreadable != "" && !force {
					return hinted{err, "--force removes it anyway"}
				}
				return storeHint(err)
			}
			if a.json {
				if jerr := a.printJSON(map[string]any{"removal": r, "dry_run": dryRun, "gc": rep}); jerr != nil {
					return jerr
				}
			} else {
				a.say("%s", r.Summary(rep, dryRun))
			}
			if err != nil {
				return fmt.Errorf("removed session %s, but collecting its blobs failed: %w", id, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "")
	return cmd
}

func (a *app) printPlan(plan retention.Plan, rep *retention.GCReport) error {
	if a.json {
		return a.printJSON(map[string]any{"dry_run": rep == nil, "plan": plan, "gc": rep})
	}
	return plan.WriteText(a.stdout, a.stderr, rep)
}

func newGCCmd(a *app) *cobra.Command {
	var pf policyFlags // --grace only
	var allowEmpty bool
	cmd := &cobra.Command{
		Use:  "gc",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := pf.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			s := a.openStore()
			defer s.Close()
			o := pf.options()
			o.CollectOnly, o.AllowEmpty = true, allowEmpty
			start := time.Now()
			bar := a.progress("scanning blobs", -1)
			o.Progress = bar.Count()
			_, rep, err := s.Retain(ctx, o)
			bar.Done()
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rep)
			}
			a.say("scanned %d blobs in %s: %d live, %d deleted (%s freed), %d spared by the grace period",
				rep.Scanned, time.Since(start).Round(time.Millisecond), rep.Live, rep.Deleted, units.FormatBytes(rep.FreedBytes), rep.Spared)
			if rep.Repacked > 0 {
				a.say("repacked %d blobs (%s saved)", rep.Repacked, units.FormatBytes(rep.RepackSaved))
			}
			return nil
		},
	}
	pf.cmd = cmd
	cmd.Flags().StringVar(&pf.grace, "grace", "", "")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "")
	cmd.RunE = withStoreHints(cmd.RunE)
	return cmd
}

func newVerifyCmd(a *app) *cobra.Command {
	var repair, remote bool
	cmd := &cobra.Command{
		Use:  "verify",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if remote {
				return a.verifyRemote(ctx, repair)
			}
			s := a.openStore()
			defer s.Close()
			var bar *progress.Bar
			before := func(f retention.Finding) {
				bar.Clear()
				f.WriteLost(a.stderr)
			}
			var prog func(done, total int)
			if a.watched() {
				prog = func(done, total int) {
					if bar == nil {
						bar = a.progress("verifying blobs", total)
					}
					bar.Set(done)
				}
			}
			rep, err := s.Verify(ctx, repair, before, prog)
			bar.Done()
			if err != nil {
				return err
			}
			if a.json {
				if err := a.printJSON(map[string]any{"ok": rep.OK(), "report": rep}); err != nil {
					return err
				}
			} else if err := rep.WriteText(a.stdout, a.stderr); err != nil {
				return err
			}
			if !rep.OK() && !repair {
				return silentError{exitFail}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "")
	cmd.RunE = withStoreHints(cmd.RunE)
	cmd.Flags().BoolVar(&remote, "remote", false, "")
	return cmd
}

func newSessionsCmd(a *app) *cobra.Command {
	var remote, tree bool
	cmd := &cobra.Command{
		Use:  "sessions",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if remote {
				if tree {
					return usagef("--tree does not apply to --remote")
				}
				return a.remoteSessions(ctx)
			}
			s := a.openStore()
			defer s.Close()
			infos, err := s.Sessions(ctx, "")
			if err != nil {
				return err
			}
			return a.printSessions(infos, tree)
		},
	}
	cmd.AddCommand(newSessionsRmCmd(a))
	cmd.Flags().BoolVar(&remote, "remote", false, "")
	cmd.Flags().BoolVar(&tree, "tree", false, "")
	return cmd
}

// printSessions prints the sessions: --json as a list, or with tree as
// the session tree, forks nested in "children"; for people a table, with
// tree each fork under its parent.
func (a *app) printSessions(infos []controller.SessionInfo, tree bool) error {
	switch {
	case tree && a.json:
		return a.printJSON(wire.NewSessionTree(infos))
	case a.json:
		return a.printJSON(wire.NewSessions(infos))
	}
	return wire.WriteSessions(a.stdout, a.stderr, infos, tree)
}

func newPinCmd(a *app, pin bool) *cobra.Command {
	var label string
	cmd := &cobra.Command{
		Use:  map[bool]string{true: "pin TURN", false: "unpin TURN"}[pin],
		Args: exactArgs(1, "one TURN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			turn, err := parseTurn(args[0])
			if err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.Pin(cmd.Context(), turn, pin, label); err != nil {
				return err
			}
			cp, err := c.Turn(cmd.Context(), turn)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"turn": turn, "pinned": pin, "label": cp.Label})
			}
			switch {
			case pin && cp.Label != "":
				a.say("pinned turn %d (%s): retention keeps it and every later turn", turn, cp.Label)
			case pin:
				a.say("pinned turn %d: retention keeps it and every later turn", turn)
			default:
				a.say("unpinned turn %d: retention may prune it again", turn)
			}
			return nil
		},
	}
	if pin {
		cmd.Flags().StringVar(&label, "label", "", "")
	}
	return cmd
}
