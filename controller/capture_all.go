package controller

import "context"

// CaptureAll records the current state of every path into the open turn as
// one durable step: one blob-store commit and one index commit for all of
// them (see capture.Capturer.CaptureAll). errs[i] is nil when paths[i] was
// captured or had been already; a failed path records nothing and does not
// stop the others.
func (c *Controller) CaptureAll(ctx context.Context, paths []string) ([]CaptureResult, []error) {
	res, errs := c.cap.CaptureAll(ctx, paths)
	for i, r := range res {
		if errs[i] == nil && r.Recorded {
			c.emit(Event{Kind: EventCaptured, Turn: r.Turn, Path: r.Path})
		}
	}
	return res, errs
}
