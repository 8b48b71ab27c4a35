// Package progress draws how far long work has got on a terminal: a bar
// when the total is known, a running count when it is not. Whether anyone
// is watching is the caller's to decide; a nil *Bar does nothing, so code
// that reports progress needs no checks.
package progress

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Bar is a progress display on one line of a terminal. It is not safe
// for concurrent use.
type Bar struct {
	bar *progressbar.ProgressBar
}

// New draws on w a display for work on total items (total < 0: unknown)
// described by what. Nothing is drawn before the first Set.
func New(w io.Writer, what string, total int) *Bar {
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
	return &Bar{bar: progressbar.NewOptions(total, opts...)}
}

// Set says done items are finished.
func (p *Bar) Set(done int) {
	if p != nil {
		p.bar.Set(done)
	}
}

// Clear erases the display, so a message can be printed on its line; the
// next Set draws it again.
func (p *Bar) Clear() {
	if p != nil {
		p.bar.Clear()
	}
}

// Done clears the display, before the command prints its summary.
func (p *Bar) Done() {
	if p != nil {
		p.bar.Finish()
	}
}

// Count adapts p to a callback taking a count, or nil when p is nil (the
// libraries skip a nil callback).
func (p *Bar) Count() func(done int) {
	if p == nil {
		return nil
	}
	return p.Set
}
