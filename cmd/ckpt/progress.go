package main

import (
	"os"

	"github.com/ckpt/ckpt/internal/progress"
	"github.com/mattn/go-isatty"
)

// terminal reports whether s, one of the app's streams, is a terminal;
// cygwin, for stderr's progress display, takes a Cygwin one too.
func terminal(s any, cygwin bool) bool {
	f, ok := s.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || cygwin && isatty.IsCygwinTerminal(f.Fd()))
}

// watched reports whether progress is shown: stderr is a terminal and the
// output is not --json.
func (a *app) watched() bool { return !a.json && terminal(a.stderr, true) }

// progress returns a progress display on stderr for work on total items
// (total < 0: unknown) described by what, or nil when nobody is watching
// stderr (a nil display does nothing).
func (a *app) progress(what string, total int) *progress.Bar {
	if !a.watched() {
		return nil
	}
	return progress.New(a.stderr, what, total)
}
