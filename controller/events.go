package controller

// EventKind names what happened.
type EventKind string

// The events a Controller emits.
const (
	EventTurnOpened EventKind = "turn_opened"
	EventCaptured   EventKind = "captured"
	EventMessage    EventKind = "message"
	EventRewound    EventKind = "rewound"
	EventUndone     EventKind = "undone"
)

// Event tells subscribers that the session changed, so a UI can re-render
// without polling.
type Event struct {
	Kind    EventKind `json:"kind"`
	Session string    `json:"session"`
	Turn    int       `json:"turn"`
	Path    string    `json:"path,omitempty"`   // for EventCaptured
	Result  *Result   `json:"result,omitempty"` // for EventRewound and EventUndone
}

// Subscribe calls fn for every event this Controller emits from now on,
// synchronously and in order, after the change is committed. fn must not
// call back into the Controller. The returned function unsubscribes.
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
