package main

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

type captureJSON struct {
	Path string `json:"path"`
	// PathBytes holds the path's exact bytes (base64) when it is not
	// valid UTF-8; omitted otherwise.
	PathBytes []byte `json:"path_bytes,omitempty"`
	Turn      int    `json:"turn"`
	Step      int    `json:"step,omitempty"` // the step of the turn it went into (see ckpt step)
	Recorded  bool   `json:"recorded"`
	Existed   bool   `json:"existed"`
}

// captureOptions are capture's arguments.
type captureOptions struct {
	paths []string
}

func newCaptureCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use: "capture PATH...",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("capture takes one or more PATHs (see ckpt capture --help)")
			}
			for _, p := range args {
				if p == "" {
					return usagef("capture: a PATH is empty")
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCapture(cmd.Context(), captureOptions{paths: args})
		},
	}
}

// runCapture records each path into the open turn; with several paths a
// failure is reported and the rest are still captured.
func (a *app) runCapture(ctx context.Context, o captureOptions) error {
	args := o.paths
	c, err := a.openRecord(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	out := []captureJSON{}
	failed := 0
	// The lines go out together (a capture of 2,000 paths made 2,000 write
	// calls), flushed before a failure is said on stderr so that the two
	// keep their order.
	lines := bufio.NewWriter(a.stdout)
	defer lines.Flush()
	// Every path in one durable step: one blob commit, one index commit
	// (Controller.Capture).
	abs := make([]string, 0, len(args))
	absErr := make([]error, len(args))
	for i, p := range args {
		ap, err := filepath.Abs(p)
		absErr[i] = err
		if err == nil {
			abs = append(abs, ap)
		}
	}
	results, errs := c.Capture(ctx, controller.CaptureOptions{Paths: abs})
	k := 0
	for i := range args {
		err := absErr[i]
		if err == nil {
			res := results[k]
			err = errs[k]
			k++
			if err == nil {
				out = append(out, captureJSON{Path: res.Path, PathBytes: wire.PathBytes(res.Path), Turn: res.Turn, Step: res.Step, Recorded: res.Recorded, Existed: res.Snap.Content != nil})
				if !a.json {
					state, note := "captured", ""
					if !res.Recorded {
						state = "already captured"
					} else if res.Snap.Content == nil {
						note = " (new file: a rewind deletes it)"
					}
					if given := givenRel(c.WorkspaceRoot(), abs[k-1]); given != "" && given != res.Path {
						note += " (the real path of " + quote.Path(given) + ", through a symlinked directory)"
					}
					fmt.Fprintf(lines, "turn %s: %s %s%s\n", controller.Target{Turn: res.Turn, Step: res.Step}, state, quote.Path(res.Path), note)
				}
				continue
			}
		}
		if len(args) == 1 {
			return err
		}
		failed++
		lines.Flush()
		a.say("ckpt: %s", msg.OneLine(err))
	}
	if a.json {
		if err := a.printJSON(out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return silentError{exitFail}
	}
	return nil
}

// givenRel is abs relative to the workspace root as given, slash-separated,
// or "" when it does not lie below root as written.
func givenRel(root, abs string) string {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
}
