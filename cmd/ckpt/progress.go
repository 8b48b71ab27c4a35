package main

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// progress shows how far long work has got: a bar when the total is known,
// a running count when it is not. It draws on stderr only when stderr is a
// terminal and the output is not --json; otherwise the app's progress is
// nil, and a nil *progress does nothing, so callers need no checks.
type progress struct {
	bar *progressbar.ProgressBar
}

// watched reports whether progress is shown: stderr is a terminal and the
// output is not --json.
func (a *app) watched() bool {
	if a.json {
		return false
	}
	f, ok := a.stderr.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progress returns a progress display for work on total items (total < 0:
// unknown) described by what, or nil when nobody is watching stderr.
func (a *app) progress(what string, total int) *progress {
	if !a.watched() {
		return nil
	}
	return newProgress(a.stderr, what, total)
}

// newProgress draws on w whatever it is; app.progress decides whether to.
func newProgress(w io.Writer, what string, total int) *progress {
	if total == 0 {
		total = -1 // the library needs a maximum above 0
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
		// Draw only when told of progress: no goroutine writes to the
		// terminal after the work is done.
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	if total < 0 {
		opts = append(opts, progressbar.OptionShowTotalBytes(false))
	}
	return &progress{bar: progressbar.NewOptions(total, opts...)}
}

// set says done items are finished.
func (p *progress) set(done int) {
	if p != nil {
		p.bar.Set(done)
	}
}

// clear erases the display, so a message can be printed on its line; the
// next set draws it again.
func (p *progress) clear() {
	if p != nil {
		p.bar.Clear()
	}
}

// done clears the display, before the command prints its summary.
func (p *progress) done() {
	if p != nil {
		p.bar.Finish()
	}
}

// count adapts p to a callback taking a count, or nil when p is nil (the
// libraries skip a nil callback).
func (p *progress) count() func(done int) {
	if p == nil {
		return nil
	}
	return p.set
}
