package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ckpt/ckpt/controller"
	"github.com/mattn/go-isatty"
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
	// Steps, with --steps only: the turn's tool calls (rewind TURN.STEP).
	Steps *[]stepListJSON `json:"steps,omitempty"`
}

// stepListJSON is one step of a turn as list --steps prints it.
type stepListJSON struct {
	Step int    `json:"step"`
	Time string `json:"time"`
	Tool string `json:"tool"`
	Key  string `json:"key"`
	// Files are the paths the step touched first, with whether each
	// existed just before the tool call.
	Files []stepFileJSON `json:"files"`
}

type stepFileJSON struct {
	Path      string `json:"path"`
	PathBytes []byte `json:"path_bytes,omitempty"`
	Existed   bool   `json:"existed"`
}

// listPage is how many turns `ckpt list` shows on a terminal when neither
// --limit nor --since is given.
const listPage = 50

func newListCmd(a *app) *cobra.Command {
	var limit, since int
	var steps bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List checkpoints, oldest first: turn, time, prompt and files with what the turn did",
		Long: `List the active turns, oldest first: turn, time, prompt and the files each
captured with what the turn did to them (+ created, - deleted, ~ modified,
= unchanged).

--since TURN starts at turn TURN, and --limit N then shows N turns from there
(page forward with the next --since). --limit N alone shows the newest N.
--steps also lists each turn's steps (its tool calls, TURN.STEP for ckpt
rewind and diff) with the files each touched first (+ did not exist before
the call, ~ existed).
On a terminal, with neither flag, list shows the newest 50 and says how to see
the rest; piped or with --json it lists every turn unless told otherwise.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := listOptions{limit: limit, since: -1, steps: steps}
			if limit < 0 {
				return usagef("list: --limit must be 0 (all) or more, not %d", limit)
			}
			if cmd.Flags().Changed("since") {
				if since < 0 {
					return usagef("list: --since must be a turn number, not %d", since)
				}
				o.since = since
			}
			// On a terminal, with neither flag, one screenful.
			o.page = !a.json && !cmd.Flags().Changed("limit") && !cmd.Flags().Changed("since") && a.stdoutTerminal()
			return a.runList(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show at most N turns: the newest N, or N from --since (0: all)")
	cmd.Flags().IntVar(&since, "since", 0, "start at turn TURN")
	cmd.Flags().BoolVar(&steps, "steps", false, "also list each turn's steps (tool calls), for rewind TURN.STEP")
	return cmd
}

// stdoutTerminal reports whether stdout is a terminal.
func (a *app) stdoutTerminal() bool {
	f, ok := a.stdout.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
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

// listOptions are list's flags: limit turns (0: all) from turn since (-1:
// the newest limit); page shows the newest listPage when limit is 0.
type listOptions struct {
	limit, since int
	page         bool
	steps        bool
}

// runList prints the active turns, oldest first, with their files.
func (a *app) runList(ctx context.Context, o listOptions) error {
	page := controller.Page{Since: o.since, Limit: o.limit}
	if o.page {
		page.Limit = listPage
	}
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer a.closeController(c)
	cps, info, err := c.CheckpointsPage(ctx, page)
	if err != nil {
		return err
	}
	var steps map[int][]controller.Step
	if o.steps {
		all, err := c.Steps(ctx)
		if err != nil {
			return err
		}
		steps = map[int][]controller.Step{}
		for _, st := range all {
			steps[st.Turn] = append(steps[st.Turn], st)
		}
	}
	if !a.json && len(cps) > 0 && len(cps) < info.Total {
		defer a.say("showing turns %d–%d of %d active; `ckpt list --since TURN --limit N` pages, `--limit 0` lists all",
			cps[0].Turn, cps[len(cps)-1].Turn, info.Total)
	}
	if a.json {
		out := make([]checkpointJSON, len(cps))
		for i, cp := range cps {
			out[i] = checkpointJSON{Turn: cp.Turn, Time: cp.Time.UTC().Format(time.RFC3339), Prompt: cp.Prompt, Files: []fileJSON{},
				Pinned: cp.Pinned, Label: cp.Label, Pruned: cp.Pruned}
			for j, f := range cp.Files {
				out[i].Files = append(out[i].Files, fileJSON{Path: f.Path, PathBytes: pathBytes(f.Path), Kind: string(cp.Kinds[j])})
			}
			if o.steps {
				list := []stepListJSON{}
				for _, st := range steps[cp.Turn] {
					s := stepListJSON{Step: st.Number, Time: st.Time.UTC().Format(time.RFC3339), Tool: st.Tool, Key: st.Key, Files: []stepFileJSON{}}
					for _, f := range st.Files {
						s.Files = append(s.Files, stepFileJSON{Path: f.Path, PathBytes: pathBytes(f.Path), Existed: f.Content != nil})
					}
					list = append(list, s)
				}
				out[i].Steps = &list
			}
		}
		return a.printJSON(out)
	}
	if len(cps) == 0 && info.Total > 0 {
		a.say("no active turn from %d on: the newest is %d", page.Since, info.Last)
		return nil
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
		for _, st := range steps[cp.Turn] {
			line = fmt.Appendf(line[:0], "  %-4s%s  %-48s", fmt.Sprintf(".%d", st.Number), st.Time.Local().Format("2006-01-02 15:04:05"), shorten(stepLabel(st), 48))
			for j, f := range st.Files {
				if j > 0 {
					line = append(line, ' ')
				} else {
					line = append(line, "  "...)
				}
				mark := "~"
				if f.Content == nil {
					mark = "+"
				}
				line = append(line, mark...)
				line = append(line, qpath(f.Path)...)
			}
			line = append(line, '\n')
			w.Write(line)
		}
	}
	return w.Flush()
}

// stepLabel says what a step was for list --steps: the tool, and its
// call's id when the agent gave one.
func stepLabel(st controller.Step) string {
	tool := st.Tool
	if tool == "" {
		tool = "(tool call)"
	}
	if st.Key != "" {
		return tool + " " + st.Key
	}
	return tool
}
