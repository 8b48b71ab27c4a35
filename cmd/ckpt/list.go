package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"unicode/utf8"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/jsondoc"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// listPage is how many turns `ckpt list` shows on a terminal when neither
// --limit nor --since is given.
const listPage = 50

func newListCmd(a *app) *cobra.Command {
	var limit, since int
	var steps bool
	cmd := &cobra.Command{
		Use:  "list",
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
	cmd.Flags().IntVar(&limit, "limit", 0, "")
	cmd.Flags().IntVar(&since, "since", 0, "")
	cmd.Flags().BoolVar(&steps, "steps", false, "")
	return cmd
}

// stdoutTerminal reports whether stdout is a terminal.
func (a *app) stdoutTerminal() bool {
	f, ok := a.stdout.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// listOptions are list's flags: limit turns (0: all) from turn since (-1:
// the newest limit); page shows the newest listPage when limit is 0.
type listOptions struct {
	limit, since int
	page         bool
	steps        bool
}

// runList prints the active turns, oldest first, with their files. A list
// of every turn (no --limit, not a terminal's page) is printed as it is
// read, so its memory does not grow with the history.
func (a *app) runList(ctx context.Context, o listOptions) error {
	page := controller.ListOptions{Since: o.since, Limit: o.limit, Steps: o.steps}
	if o.page {
		page.Limit = listPage
	}
	c, err := a.open(ctx)
	if errors.As(err, new(noSessionYet)) {
		return a.emptyList(err)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	out := &listOut{a: a, w: bufio.NewWriter(a.stdout)}
	var total, last int // of the active history: its turns, the newest one's number
	if page.Limit <= 0 {
		if exitAfterRun && os.Getenv("GOGC") == "" {
			// main's GOGC of 400 lets the heap grow to 16 MiB of
			// garbage before the first collection; printed as it is
			// read, the list's live heap stays near 1 MiB, so at 100
			// the collector keeps peak RSS about 10 MiB lower (50,000
			// turns: 39 -> 30 MiB, for ~10% more CPU).
			debug.SetGCPercent(100)
		}
		_, info, err := c.Checkpoints(ctx, controller.ListOptions{Since: max(page.Since, 0), Each: out.add, Steps: o.steps})
		if err != nil {
			return err
		}
		total, last = info.Total, info.Last
	} else {
		cps, info, err := c.Checkpoints(ctx, page)
		for i := 0; err == nil && i < len(cps); i++ {
			err = out.add(cps[i])
		}
		if err != nil {
			return err
		}
		total, last = info.Total, info.Last
	}
	if !a.json && out.n > 0 && out.n < total {
		defer a.say("showing turns %d–%d of %d active; `ckpt list --since TURN --limit N` pages, `--limit 0` lists all",
			out.first, out.last, total)
	}
	if out.n == 0 && !a.json {
		if last >= 0 {
			a.say("no active turn from %d on: the newest is %d", page.Since, last)
		} else {
			a.say("no checkpoints yet: open a turn with `ckpt turn PROMPT`")
		}
		return nil
	}
	return out.finish()
}

// listOut prints list's rows as they come: a table for people, or with
// --json the elements of one JSON array, byte for byte what encoding the
// whole list at once with printJSON gives.
type listOut struct {
	a     *app
	w     *bufio.Writer
	n     int // rows printed
	first int // the first and last turn printed
	last  int
	line  []byte
	arr   *jsondoc.Array // with --json
}

// add prints one turn.
func (l *listOut) add(cp controller.Checkpoint) error {
	if l.n == 0 {
		l.first = cp.Turn
	}
	l.last = cp.Turn
	if l.a.json {
		return l.addJSON(cp)
	}
	if l.n == 0 {
		fmt.Fprintf(l.w, "%-5s %-19s  %-48s  %s\n", "TURN", "TIME", "PROMPT", "FILES")
	}
	l.n++
	line := strconv.AppendInt(l.line[:0], int64(cp.Turn), 10)
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
	line = msg.AppendShort(line, prompt, 48)
	for n := utf8.RuneCount(line[27:]); n < 50 && len(cp.Files) > 0; n++ {
		line = append(line, ' ')
	}
	for j, f := range cp.Changes {
		if j > 0 {
			line = append(line, ' ')
		}
		line = append(line, f.Kind.Mark()...)
		line = append(line, quote.Path(f.Path)...)
	}
	line = append(line, '\n')
	l.w.Write(line)
	for _, st := range cp.Steps {
		line = fmt.Appendf(line[:0], "  %-4s%s  %-48s", fmt.Sprintf(".%d", st.Number), st.Time.Local().Format("2006-01-02 15:04:05"), msg.Shorten(stepLabel(st), 48))
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
			line = append(line, quote.Path(f.Path)...)
		}
		line = append(line, '\n')
		l.w.Write(line)
	}
	l.line = line
	return nil
}

// addJSON prints one turn as an element of the JSON array. Package wire
// makes every list in the element non-nil (the CLI prints [] for an empty
// list, never null), which is what printJSON's jsondoc pass would do to
// the whole document.
func (l *listOut) addJSON(cp controller.Checkpoint) error {
	l.n++
	return l.array().Add(wire.NewCheckpoint(cp))
}

// finish ends the output: the JSON array's close (or [] when it is empty).
func (l *listOut) finish() error {
	if l.a.json {
		l.array().Close()
	}
	return l.w.Flush()
}

// array is the --json output's array, started at first use.
func (l *listOut) array() *jsondoc.Array {
	if l.arr == nil {
		l.arr = jsondoc.NewArray(l.w)
	}
	return l.arr
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
