package controller

import (
	"context"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
)

// Event says that the session changed, so a UI can re-render without
// polling: one change of the session's change log, as Watch reads it.
type Event struct {
	// Kind says what happened: "turn_opened", "step_opened" (a tool call
	// opened a step of the open turn), "captured", "message", "pinned" (a
	// turn's pin or label changed), "rewound" (a rewind or a revert
	// finished), "undone", "redone", "summarized", or "resync": a
	// front-end reads the whole state again. A resync begins a Watch from
	// now (WatchOptions.After < 0), and stands for the changes a watcher
	// missed when the change log was trimmed past the last one it read
	// (the events after it follow on as usual; some may already be in the
	// state it reads).
	Kind    string `json:"kind"`
	Session string `json:"session"`
	// Turn is the turn the change concerns: for a rewind, undo, redo or
	// summarize the op's target turn.
	Turn int    `json:"turn"`
	Path string `json:"path,omitempty"` // the path a "captured" recorded
	// Seq is the change's position in the session's change log:
	// increasing in commit order, and the WatchOptions.After that resumes
	// after it.
	Seq int64 `json:"seq,omitempty"`
}

// defaultWatchInterval is how often Watch reads the change log when
// WatchOptions.Interval is zero.
const defaultWatchInterval = 100 * time.Millisecond

// watchBatch bounds the changes Watch reads per query.
const watchBatch = 256

// WatchOptions modify Watch.
type WatchOptions struct {
	// Interval is how often the session's change log is read; zero means
	// every 100ms.
	Interval time.Duration
	// After is the Seq after which to start: the last Event.Seq seen, to
	// resume. Zero replays the whole change log (from a "resync" once it
	// has been trimmed). Negative starts now: the first event is a
	// "resync" whose Seq is the newest change's (0 when there is none),
	// the moment for a UI to read the state it renders, and every change
	// committed after it follows, so none between the two is missed.
	After int64
}

// Watch calls fn for every change committed to the session, by this
// process or any other (agent hooks capture from processes of their own),
// one Event per change and in commit order (Seq increases), until ctx is
// done; it then returns ctx's error, or the first error reading the log.
// A turn opened, a capture, a message, a finished rewind, undo, redo,
// revert or summarize, and a pin each make one event (History has each
// op's details). It reads the session's change log, one
// indexed query per interval, so it costs nothing while nothing changes.
// fn runs on Watch's goroutine and may call the Controller. The log keeps
// only the newest changes (checkpoints.DefaultChangeLogKeep, trimmed when
// a turn or step opens): a watcher that falls further behind, because fn
// was slow or After was old, gets one "resync" in place of what it
// missed, then the changes that follow.
func (c *Controller) Watch(ctx context.Context, o WatchOptions, fn func(Event)) error {
	if o.Interval <= 0 {
		o.Interval = defaultWatchInterval
	}
	after := o.After
	if after < 0 {
		seq, err := c.idx.LastChange(ctx)
		if err != nil {
			return err
		}
		after = seq
		fn(Event{Kind: "resync", Session: c.session, Seq: seq})
	}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		for {
			chs, err := c.idx.ChangesAfter(ctx, after, watchBatch)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			for _, ch := range chs {
				after = ch.ID
				fn(c.changeEvent(ch))
			}
			if len(chs) < watchBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// changeEvent describes a change of the log as an Event.
func (c *Controller) changeEvent(ch checkpoints.Change) Event {
	e := Event{Session: c.session, Turn: ch.Turn, Seq: ch.ID, Path: ch.Path, Kind: string(ch.Kind)}
	switch ch.Kind {
	case checkpoints.ChangeTrimmed:
		e.Kind = "resync"
	case checkpoints.ChangeOp:
		switch {
		case ch.Op == checkpoints.OpUndo && ch.UndoesKind == checkpoints.OpUndo:
			e.Kind = "redone"
		case ch.Op == checkpoints.OpUndo:
			e.Kind = "undone"
		case ch.Action == checkpoints.ActionSummarizeFrom || ch.Action == checkpoints.ActionSummarizeUpTo:
			e.Kind = "summarized"
		default:
			e.Kind = "rewound"
		}
	}
	return e
}
