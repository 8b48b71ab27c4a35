package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/remote"
	"github.com/spf13/cobra"
)

// openRemote opens the store's configured remote. Its transfers show on a
// progress display while someone watches; done clears it.
func (a *app) openRemote(ctx context.Context) (r *remote.Remote, done func(), err error) {
	if r, err = remote.OpenStore(ctx, a.store); err != nil {
		return nil, nil, err
	}
	bar := a.progress("bytes transferred", -1)
	if bar != nil {
		r.Progress = func(done int64) { bar.Set(int(done)) }
	}
	return r, bar.Done, nil
}

func newRemoteCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:  "remote",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := remote.LoadConfig(a.store)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(cfg)
			}
			_, err = fmt.Fprint(a.stdout, cfg)
			return err
		},
	}
	cmd.AddCommand(newRemoteGCCmd(a))
	return cmd
}

func newRemoteGCCmd(a *app) *cobra.Command {
	var margin string
	var dryRun bool
	var repackBelow float64
	cmd := &cobra.Command{
		Use:  "gc",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := units.ParseAge(margin)
			if err != nil || m <= 0 {
				return usagef("--margin %q: want a duration such as 24h or 2d", margin)
			}
			if repackBelow < 0 || repackBelow > 1 {
				return usagef("--repack-below %g: want a fraction from 0 (never repack) to 1", repackBelow)
			}
			if repackBelow == 0 {
				repackBelow = -1
			}
			r, _, err := a.openRemote(cmd.Context())
			if err != nil {
				return err
			}
			defer r.Close()
			unlock, err := r.Lock(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer unlock()
			rep, err := r.GC(cmd.Context(), remote.GCOptions{Margin: m, DryRun: dryRun, RepackBelow: repackBelow})
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(rep)
			}
			rep.WriteText(a.stdout, a.stderr)
			return nil
		},
	}
	cmd.Flags().StringVar(&margin, "margin", "24h", "")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "")
	cmd.Flags().Float64Var(&repackBelow, "repack-below", remote.DefaultRepackBelow, "")
	return cmd
}

func newSyncCmd(a *app) *cobra.Command {
	var wait bool
	var sessions []string
	cmd := &cobra.Command{
		Use:  "sync",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range sessions {
				if !controller.ValidSession(s) {
					return usagef("--session-only %q: %v", s, controller.ErrBadSession)
				}
			}
			r, done, err := a.openRemote(cmd.Context())
			if err != nil {
				return err
			}
			defer r.Close()
			res, err := r.Sync(cmd.Context(), sessions, wait)
			done()
			if errors.Is(err, remote.ErrBusy) {
				fmt.Fprintln(a.stderr, "ckpt: another sync of this store is running; not waiting (use --wait)")
				if a.json {
					return a.printJSON([]remote.SyncResult{})
				}
				return nil
			}
			if a.json {
				if perr := a.printJSON(res); perr != nil {
					return perr
				}
			} else {
				for _, s := range res {
					fmt.Fprintln(a.stdout, s)
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "")
	cmd.Flags().StringSliceVar(&sessions, "session-only", nil, "")
	return cmd
}

func newPullCmd(a *app) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:  "pull SESSION",
		Args: exactArgs(1, "one SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !controller.ValidSession(args[0]) {
				return usagef("session %q: %v", args[0], controller.ErrBadSession)
			}
			if as != "" && !controller.ValidSession(as) {
				return usagef("--as %q: %v", as, controller.ErrBadSession)
			}
			// --workspace (the global flag) re-points the session; only an
			// explicit flag does, not $CKPT_WORKSPACE.
			var ws string
			if f := cmd.Flags().Lookup("workspace"); f != nil && f.Changed {
				abs, err := filepath.Abs(f.Value.String())
				if err != nil {
					return err
				}
				ws = abs
			}
			r, done, err := a.openRemote(cmd.Context())
			if err != nil {
				return err
			}
			defer r.Close()
			res, err := r.Pull(cmd.Context(), remote.PullOptions{Session: args[0], As: as, Workspace: ws})
			done()
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(res)
			}
			fmt.Fprint(a.stdout, res)
			return nil
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "")
	return cmd
}

// remoteSessions prints the remote's sessions (ckpt sessions --remote).
func (a *app) remoteSessions(ctx context.Context) error {
	r, _, err := a.openRemote(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	hs, err := r.Sessions(ctx)
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(hs)
	}
	_, err = fmt.Fprint(a.stdout, remote.HeadTable(hs))
	return err
}

// verifyRemote checks the remote (ckpt verify --remote); exit 1 on findings.
func (a *app) verifyRemote(ctx context.Context, repair bool) error {
	if repair {
		return usagef("--repair works on the local store only")
	}
	r, _, err := a.openRemote(ctx)
	if err != nil {
		return err
	}
	defer r.Close()
	rep, err := r.Verify(ctx, a.progress("objects verified", -1).Count())
	if err != nil {
		return err
	}
	if a.json {
		if err := a.printJSON(map[string]any{"ok": rep.OK(), "report": rep}); err != nil {
			return err
		}
	} else {
		rep.WriteText(a.stdout, a.stderr)
	}
	if !rep.OK() {
		return silentError{exitFail}
	}
	return nil
}
