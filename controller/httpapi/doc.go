// Package httpapi serves one controller.Controller over HTTP: a JSON API for
// checkpoints, conversation, diff, rewind, undo, redo, history, fork and summarize, a
// Server-Sent Events stream of changes, and the embedded web page that drives
// them. `ckpt serve` is this handler served by a Server (CheckAddr's and
// Listen's loopback rule, DefaultLimits' timeouts, a clean shutdown); a
// desktop front-end can do the same, or mount the handler in its own server.
//
// It holds no rewind logic: every request is one Controller call.
//
// Steps: each checkpoint lists its steps (the turn's tool calls, with the
// files each touched first); POST /api/rewind takes {"turn": T, "step": S}
// to rewind code to just before T's S-th tool call (scope code, the
// default for a step; a conversation scope is a 400), and GET /api/diff
// takes ?turn=T&step=S.
//
// Guards, in the order a request meets them:
//   - Host: the request's Host header must name the address the connection
//     arrived on (a loopback name or IP, or the local IP itself) with its
//     port, or be listed in Options.Hosts. A page on another site whose DNS
//     name was rebound to 127.0.0.1 sends its own name and is refused (403).
//   - Origin: an /api/ request, and any request that is not GET or HEAD, that
//     carries an Origin header must come from the server's own origin (or
//     one in Options.Origins); a cross-origin request is refused (403) before
//     it reaches the controller.
//   - Token: every /api/ request needs "Authorization: Bearer TOKEN". The
//     token is never accepted in a URL; the page reads it from the URL
//     fragment once, drops it from the address bar, and sends the header,
//     also on the event stream (read with fetch, not EventSource).
//   - Bodies are bounded in size (1 MiB) and in the time to read them
//     (Options.BodyTimeout); a response write is bounded by
//     Options.WriteTimeout, each event of the stream included.
//
// The static page files need no token: they hold no session data.
//
// GET /api/events streams every change to the session as it is committed,
// by this handler or by other processes (hooks capturing, the CLI
// rewinding), in commit order: one controller.Event per change
// (Controller.Watch), {"kind": "captured", "turn": 2, "path": "a.go",
// "seq": 41, ...}. A client that reads so slowly that the session's change
// log is trimmed past what it was sent gets {"kind": "resync", ...} in place
// of the changes it missed: it reads the whole state again (the page does
// so on every event).
package httpapi
