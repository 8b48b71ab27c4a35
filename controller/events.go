package controller

import (
	"context"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
)

// EventKind names what happened.
type EventKind string

// The events a Controller emits.
const (
	EventTurnOpened EventKind = "turn_opened"
	EventCaptured   EventKind = "captured"
	EventMessage    EventKind = "message"
	EventRewound    EventKind = "rewound"
	EventUndone     EventKind = "undone"
	// EventRedone: after a Redo (and an Undo of an undo).
	EventRedone EventKind = "redone"
	// EventForked: emitted by the original session's Controller after a
	// fork; Path holds the new session's id.
	EventForked EventKind = "forked"
	// EventSummarized: after a summarize; Result is set.
	EventSummarized EventKind = "summarized"
	// EventPinned: a turn's pin or label changed (Pin).
	EventPinned EventKind = "pinned"
	// EventStepOpened: a tool call opened a step of the open turn
	// (BeginStep).
	EventStepOpened EventKind = "step_opened"
	// EventResync (Watch only): the change log was trimmed past the last
	// change this watcher read, so it has missed changes it cannot be
	// told: a front-end reads the whole state again. The events after it
	// follow on as usual (some may already be in the state it reads).
	EventResync EventKind = "resync"
)

// Event tells subscribers that the session changed, so a UI can re-render
// without polling.
type Event struct {
	Kind    EventKind `json:"kind"`
	Session string    `json:"session"`
	Turn    int       `json:"turn"`
	Step    int       `json:"step,omitempty"`   // for EventStepOpened, and a rewind to a step
	Path    string    `json:"path,omitempty"`   // for EventCaptured
	Result  *Result   `json:"result,omitempty"` // Subscribe only: for EventRewound, EventUndone, EventRedone, EventSummarized
	// Seq is the change's position in the session's change log, for
	// Watch's events (0 from Subscribe): increasing in commit order, and
	// the WatchOptions.After that resumes after it.
	Seq int64 `json:"seq,omitempty"`
}

// Subscribe calls fn for every event this Controller emits from now on,
// synchronously and in order, after the change is committed. fn must not
// call back into the Controller. The returned function unsubscribes.
// Changes made by other processes (or other Controllers) are not seen:
// Watch reports those.
func (c *Controller) Subscribe(fn func(Event)) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.subs[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs, id)
	}
}

func (c *Controller) emit(e Event) {
	e.Session = c.session
	c.mu.Lock()
	fns := make([]func(Event), 0, len(c.subs))
	for _, fn := range c.subs {
		fns = append(fns, fn)
	}
	c.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
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
	// After is the Seq after which to start: LastSeq's, read with the
	// state a UI renders, so no change between the two is missed; or the
	// last Event.Seq seen, to resume. Zero replays the whole change log
	// (from an EventResync once it has been trimmed).
	After int64
}

// Watch calls fn for every change committed to the session, by this
// process or any other (agent hooks capture from processes of their own),
// one Event per change and in commit order (Seq increases), until ctx is
// done; it then returns ctx's error, or the first error reading the log.
// A turn opened, a capture, a message, a finished rewind, undo, redo,
// revert or summarize, and a pin each make one event; Result is not set
// (History has each op's details). It reads the session's change log, one
// indexed query per interval, so it costs nothing while nothing changes.
// fn runs on Watch's goroutine and may call the Controller. The log keeps
// only the newest changes (checkpoints.DefaultChangeLogKeep, trimmed when
// a turn or step opens): a watcher that falls further behind, because fn
// was slow or After was old, gets one EventResync in place of what it
// missed, then the changes that follow.
func (c *Controller) Watch(ctx context.Context, o WatchOptions, fn func(Event)) error {
	if o.Interval <= 0 {
		o.Interval = defaultWatchInterval
	}
	after := o.After
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

// LastSeq returns the Seq of the latest change committed to the session (0
// when there is none): read it before the state a UI renders, then Watch
// with WatchOptions.After set to it.
func (c *Controller) LastSeq(ctx context.Context) (int64, error) {
	return c.idx.LastChange(ctx)
}

// changeEvent describes a change of the log as the Event the Controller
// that made it emitted.
func (c *Controller) changeEvent(ch checkpoints.Change) Event {
	e := Event{Session: c.session, Turn: ch.Turn, Seq: ch.ID, Path: ch.Path}
	switch ch.Kind {
	case checkpoints.ChangeTurnOpened:
		e.Kind = EventTurnOpened
	case checkpoints.ChangeCaptured:
		e.Kind = EventCaptured
	case checkpoints.ChangeMessage:
		e.Kind = EventMessage
	case checkpoints.ChangePinned:
		e.Kind = EventPinned
	case checkpoints.ChangeTrimmed:
		e.Kind = EventResync
	case checkpoints.ChangeOp:
		switch {
		case ch.Op == checkpoints.OpUndo && ch.UndoesKind == checkpoints.OpUndo:
			e.Kind = EventRedone
		case ch.Op == checkpoints.OpUndo:
			e.Kind = EventUndone
		case ch.Action == checkpoints.ActionSummarizeFrom || ch.Action == checkpoints.ActionSummarizeUpTo:
			e.Kind = EventSummarized
		default:
			e.Kind = EventRewound
		}
	default:
		e.Kind = EventKind(ch.Kind)
	}
	return e
}
