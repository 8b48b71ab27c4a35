package main

import (
	"os"

	"github.com/ckpt/ckpt/internal/progress"
	"github.com/mattn/go-isatty"
)

// watched reports whether progress is shown: stderr is a terminal and the
// output is not --json.
func (a *app) watched() bool {
	if a.json {
		return false
	}
	f, ok := a.stderr.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progress returns a progress display on stderr for work on total items
// (total < 0: unknown) described by what, or nil when nobody is watching
// stderr (a nil display does nothing).
func (a *app) progress(what string, total int) *progress.Bar {
	if !a.watched() {
		return nil
	}
	return progress.New(a.stderr, what, total)
}
