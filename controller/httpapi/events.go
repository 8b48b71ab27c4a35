package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/jsondoc"
)

// events streams every change to the session, by this handler or any
// other process (Controller.Watch), as Server-Sent Events, in commit order.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch := make(chan controller.Event)
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- h.c.Watch(ctx, controller.WatchOptions{Interval: h.o.PollInterval, After: -1}, func(e controller.Event) {
			select {
			case ch <- e: // a slow client slows the watch; past the log's bound it gets a "resync"
			case <-ctx.Done():
			}
		})
	}()
	// Watch's first event marks where it starts (the newest change): the
	// stream opens once that is fixed, and carries what follows.
	select {
	case <-ch:
	case err := <-watchErr:
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	write := func(s string) bool {
		h.deadline(w, true, h.o.WriteTimeout)
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.WriteHeader(http.StatusOK)
	if !write(": ckpt events\n\n") {
		return
	}
	keep := time.NewTicker(h.o.KeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-watchErr:
			if ctx.Err() == nil {
				h.log.Error("httpapi: events", "err", err)
			}
			return
		case e := <-ch:
			b, _ := jsondoc.Marshal(wire.NewEvent(e))
			if !write("data: " + string(b) + "\n\n") {
				return
			}
		case <-keep.C:
			if !write(": keep-alive\n\n") {
				return
			}
		}
	}
}
