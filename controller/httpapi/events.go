package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/controller"
)

// fingerprint is a cheap summary of the session directory's files: it
// moves when any process commits a change to the session. Empty files
// hold no session data (the lock files are empty and only flocked), so
// they are left out: taking a lock is not a change. "" when there is no
// store to look in.
func (h *handler) fingerprint() string {
	if h.o.Store == "" {
		return ""
	}
	dir := filepath.Join(h.o.Store, "sessions", h.c.Session())
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil || fi.Size() == 0 {
			continue
		}
		b.WriteString(e.Name())
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(fi.Size(), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		b.WriteByte(';')
	}
	return b.String()
}

// events streams the controller's events, and "changed" when the session
// changes by another process, as Server-Sent Events.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	ch := make(chan controller.Event, 64)
	cancel := h.c.Subscribe(func(e controller.Event) {
		select {
		case ch <- e:
		default: // a slow client loses events; the poll below still says "changed"
		}
	})
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	write := func(s string) bool {
		h.deadline(w, true, h.o.WriteTimeout)
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	last := h.fingerprint()
	w.WriteHeader(http.StatusOK)
	if !write(": ckpt events\n\n") {
		return
	}
	poll := time.NewTicker(h.o.PollInterval)
	defer poll.Stop()
	keep := time.NewTicker(h.o.KeepAlive)
	defer keep.Stop()
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		return write("data: " + string(b) + "\n\n")
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-ch:
			last = h.fingerprint() // our own change: already reported
			if !send(e) {
				return
			}
		case <-poll.C:
			if fp := h.fingerprint(); fp != last {
				last = fp
				if !send(map[string]string{"kind": "changed", "session": h.c.Session()}) {
					return
				}
			}
		case <-keep.C:
			if !write(": keep-alive\n\n") {
				return
			}
		}
	}
}
