package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// TestMessageHints: a refusal carries the hint of the tool that refused
// (a rewind's conflict, an undo's or redo's); nothing to undo or redo and
// an op not in effect point at history; an op that cannot be reversed
// exactly, which says itself what to reverse first, gets no hint.
func TestMessageHints(t *testing.T) {
	conflict := fmt.Errorf("controller: %w: a.txt", controller.ErrConflict)
	for _, c := range []struct {
		err  error
		hint string
	}{
		{refused{conflict, " — call rewind again with force: true to overwrite them"}, " — call rewind again with force: true to overwrite them"},
		{refused{conflict, " — call again with force: true to overwrite that work (history lists every op)"}, " — call again with force: true to overwrite that work (history lists every op)"},
		{fmt.Errorf("no rewind in effect: %w", controller.ErrNothingToUndo), " (history lists every op)"},
		{fmt.Errorf("op 3 is unfinished: %w", controller.ErrNotInEffect), " (history lists every op)"},
		{fmt.Errorf("op 3 changed the conversation before ckpt recorded such changes: op cannot be reversed exactly: %w", controller.ErrNotInEffect), ""},
	} {
		got := message(c.err)
		if c.hint == "" && strings.Contains(got, "history lists") || c.hint != "" && !strings.HasSuffix(got, c.hint) {
			t.Errorf("message(%v) = %q, want the hint %q", c.err, got, c.hint)
		}
	}
}
