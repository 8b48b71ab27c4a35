package wire

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/jsondoc"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
)

// CheckpointList writes a list of turns (`ckpt list`) a turn at a time,
// so a long history never sits whole in memory: for people a table, a
// line per turn (and with steps a line per step below it), or as JSON
// the elements of one array, byte for byte what encoding the whole
// []Checkpoint at once with jsondoc gives. It is not safe for concurrent
// use.
type CheckpointList struct {
	// N counts the turns written; First and Last are the first and the
	// last of them.
	N, First, Last int

	w    *bufio.Writer
	json bool
	line []byte
	arr  *jsondoc.Array // with json, started at the first Add
}

// NewCheckpointList starts a list on w, as JSON when asJSON. A turn's
// steps are listed when the checkpoint carries them (ListOptions.Steps).
func NewCheckpointList(w io.Writer, asJSON bool) *CheckpointList {
	return &CheckpointList{w: bufio.NewWriter(w), json: asJSON}
}

// Add writes one turn.
func (l *CheckpointList) Add(cp controller.Checkpoint) error {
	if l.N == 0 {
		l.First = cp.Turn
	}
	l.Last = cp.Turn
	if l.json {
		return l.addJSON(cp)
	}
	if l.N == 0 {
		fmt.Fprintf(l.w, "%-5s %-19s  %-48s  %s\n", "TURN", "TIME", "PROMPT", "FILES")
	}
	l.N++
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

// addJSON writes one turn as an element of the JSON array. NewCheckpoint
// makes every list in the element non-nil, which is what jsondoc would do
// to the whole document.
func (l *CheckpointList) addJSON(cp controller.Checkpoint) error {
	l.N++
	return l.array().Add(NewCheckpoint(cp))
}

// Close ends the list (for JSON the array's close, or [] when it is
// empty) and flushes it to w.
func (l *CheckpointList) Close() error {
	if l.json {
		l.array().Close()
	}
	return l.w.Flush()
}

// Finish ends the list as Close does and, for people, says on msgs what
// it left out: which turns of the total in the active history it showed,
// when not all; or, when it showed none, that the newest turn (last) is
// before since, or that there is none yet (last < 0).
func (l *CheckpointList) Finish(msgs io.Writer, total, last, since int) error {
	switch {
	case l.json:
		return l.Close()
	case l.N == 0 && last >= 0:
		fmt.Fprintf(msgs, "no active turn from %d on: the newest is %d\n", since, last)
		return nil
	case l.N == 0:
		fmt.Fprintln(msgs, "no checkpoints yet: open a turn with `ckpt turn PROMPT`")
		return nil
	}
	err := l.Close()
	if l.N < total {
		fmt.Fprintf(msgs, "showing turns %d–%d of %d active; `ckpt list --since TURN --limit N` pages, `--limit 0` lists all\n", l.First, l.Last, total)
	}
	return err
}

// array is the JSON output's array, started at first use.
func (l *CheckpointList) array() *jsondoc.Array {
	if l.arr == nil {
		l.arr = jsondoc.NewArray(l.w)
	}
	return l.arr
}

// stepLabel says what a step was for the table: the tool, and its call's
// id when the agent gave one.
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
