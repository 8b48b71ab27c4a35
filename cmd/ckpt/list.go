package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

type fileJSON struct {
	Path      string `json:"path"`
	PathBytes []byte `json:"path_bytes,omitempty"` // exact bytes (base64) of a path that is not UTF-8
	Kind      string `json:"kind"`
}

type checkpointJSON struct {
	Turn   int        `json:"turn"`
	Time   string     `json:"time"`
	Prompt string     `json:"prompt"`
	Files  []fileJSON `json:"files"`
	Pinned bool       `json:"pinned"`
	Label  string     `json:"label,omitempty"`
	Pruned bool       `json:"pruned"` // retention dropped its files: conversation rewinds only
}

func newListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List checkpoints, oldest first: turn, time, prompt and files with what the turn did",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runList(cmd.Context())
		},
	}
}

func kindMark(kind string) string {
	switch kind {
	case "created":
		return "+"
	case "deleted":
		return "-"
	case "unchanged":
		return "="
	}
	return "~"
}

// shorten puts s on one line and cuts it to n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// runList prints the active turns, oldest first, with their files.
func (a *app) runList(ctx context.Context) error {
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	cps, err := c.Checkpoints(ctx)
	if err != nil {
		return err
	}
	if a.json {
		out := make([]checkpointJSON, len(cps))
		for i, cp := range cps {
			out[i] = checkpointJSON{Turn: cp.Turn, Time: cp.Time.UTC().Format(time.RFC3339), Prompt: cp.Prompt, Files: []fileJSON{},
				Pinned: cp.Pinned, Label: cp.Label, Pruned: cp.Pruned}
			for j, f := range cp.Files {
				out[i].Files = append(out[i].Files, fileJSON{Path: f.Path, PathBytes: pathBytes(f.Path), Kind: string(cp.Kinds[j])})
			}
		}
		return a.printJSON(out)
	}
	if len(cps) == 0 {
		a.say("no checkpoints yet: open a turn with `ckpt turn PROMPT`")
		return nil
	}
	w := bufio.NewWriter(a.stdout)
	fmt.Fprintf(w, "%-5s %-19s  %-48s  %s\n", "TURN", "TIME", "PROMPT", "FILES")
	var line []byte
	for _, cp := range cps {
		line = strconv.AppendInt(line[:0], int64(cp.Turn), 10)
		for len(line) < 6 {
			line = append(line, ' ')
		}
		line = cp.Time.Local().AppendFormat(line, "2006-01-02 15:04:05")
		line = append(line, "  "...)
		prompt := cp.Prompt
		switch {
		case cp.Pinned && cp.Label != "":
			prompt = "[pinned: " + cp.Label + "] " + prompt
		case cp.Pinned:
			prompt = "[pinned] " + prompt
		case cp.Pruned:
			prompt = "[pruned] " + prompt
		}
		line = append(line, shorten(prompt, 48)...)
		for n := utf8.RuneCount(line[27:]); n < 50 && len(cp.Files) > 0; n++ {
			line = append(line, ' ')
		}
		for j, f := range cp.Files {
			if j > 0 {
				line = append(line, ' ')
			}
			line = append(line, kindMark(string(cp.Kinds[j]))...)
			line = append(line, qpath(f.Path)...)
		}
		line = append(line, '\n')
		w.Write(line)
	}
	return w.Flush()
}
