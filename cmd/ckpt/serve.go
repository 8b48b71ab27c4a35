package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newServeCmd) }

// maxBody bounds request bodies.
const maxBody = 1 << 20

// Poll and keep-alive periods of the event stream (variables for tests).
var (
	servePoll      = 250 * time.Millisecond
	serveKeepAlive = 15 * time.Second
)

func newServeCmd(a *app) *cobra.Command {
	var addr, tokenFile string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the session over HTTP (JSON API and Server-Sent Events) on loopback",
		Long: `Serve the session given by the global flags over HTTP: a JSON API for sessions,
checkpoints, conversation, diff, rewind, undo, redo, history, fork and
summarize, and a Server-Sent Events stream (/api/events) of changes,
including changes made by other processes. Every request needs "Authorization: Bearer TOKEN" (or
?token=TOKEN on /api/events). The token is random, unless --token-file names a
file holding it. One JSON line {"url":...,"token":...} goes to stdout.
Stops cleanly on SIGINT or SIGTERM.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			token, err := serveToken(tokenFile)
			if err != nil {
				return err
			}
			return a.serve(cmd.Context(), addr, token, nil)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "read the bearer token from this file instead of making a random one")
	return cmd
}

// serveToken reads the token from file, or makes a random one.
func serveToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usagef("token file: %v", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", usagef("token file %s is empty", file)
		}
		return t, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// server is one `ckpt serve`: one controller for its life.
type server struct {
	a     *app
	c     *controller.Controller
	token string
	mu    sync.Mutex // serializes mutating calls
	dir   string     // the session's directory, for the change fingerprint
}

// serve listens on addr and serves until ctx is cancelled. ready, when not
// nil, receives the bound URL once listening.
func (a *app) serve(ctx context.Context, addr, token string, ready chan<- string) error {
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s := &server{a: a, c: c, token: token, dir: checkpoints.SessionDir(a.store, a.session)}
	url := "http://" + ln.Addr().String()
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	line, _ := json.Marshal(map[string]string{"url": url, "token": token})
	fmt.Fprintln(a.stdout, string(line))
	a.say("ckpt: serving session %s at %s (token %s); Ctrl-C stops", a.session, url, token)
	if ready != nil {
		ready <- url
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

func (s *server) handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/sessions", s.sessions)
	m.HandleFunc("GET /api/checkpoints", s.checkpoints)
	m.HandleFunc("GET /api/conversation", s.conversation)
	m.HandleFunc("GET /api/diff", s.diff)
	m.HandleFunc("POST /api/rewind", s.rewind)
	m.HandleFunc("POST /api/undo", s.undo)
	m.HandleFunc("POST /api/redo", s.redo)
	m.HandleFunc("GET /api/history", s.history)
	m.HandleFunc("POST /api/fork", s.fork)
	m.HandleFunc("POST /api/summarize", s.summarize)
	m.HandleFunc("GET /api/events", s.events)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return withWeb(s.auth(m))
}

// auth refuses requests without the token.
func (s *server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && r.URL.Path == "/api/events" {
			got, ok = r.URL.Query().Get("token"), true
		}
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ckpt"`)
			httpError(w, http.StatusUnauthorized, "missing or wrong token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// fail maps a controller error to a status code.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, controller.ErrNoTurn), errors.Is(err, checkpoints.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, controller.ErrConflict), errors.Is(err, controller.ErrUndoConflict), errors.Is(err, controller.ErrBusy),
		errors.Is(err, controller.ErrSessionExists), errors.Is(err, checkpoints.ErrExists), errors.Is(err, checkpoints.ErrNothingToUndo),
		errors.Is(err, controller.ErrRedoConflict), errors.Is(err, controller.ErrNothingToRedo), errors.Is(err, controller.ErrNotInEffect),
		errors.Is(err, controller.ErrNotReversible):
		code = http.StatusConflict
	case errors.Is(err, controller.ErrEmptySummary), errors.Is(err, checkpoints.ErrBadSession), errors.Is(err, checkpoints.ErrPruned):
		code = http.StatusBadRequest
	}
	httpError(w, code, oneLine(err))
}

// decode reads a JSON body into v; on failure it has written the response.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", tooBig.Limit))
		return false
	case errors.Is(err, io.EOF):
		httpError(w, http.StatusBadRequest, "empty body: a JSON object is required")
		return false
	case err != nil:
		httpError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return false
	}
	return true
}

// turnOf checks a required turn field.
func turnOf(w http.ResponseWriter, turn *int) (int, bool) {
	if turn == nil || *turn < 0 {
		httpError(w, http.StatusBadRequest, `"turn" must be a whole number ≥ 0`)
		return 0, false
	}
	return *turn, true
}

func (s *server) sessions(w http.ResponseWriter, r *http.Request) {
	st, err := controller.OpenStore(r.Context(), s.a.store)
	if err != nil {
		fail(w, err)
		return
	}
	defer st.Close()
	out, err := st.Sessions(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) checkpoints(w http.ResponseWriter, r *http.Request) {
	cps, err := s.c.Checkpoints(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]checkpointJSON, len(cps))
	for i, cp := range cps {
		out[i] = checkpointJSON{Turn: cp.Turn, Time: cp.Time.UTC().Format(time.RFC3339), Prompt: cp.Prompt, Files: []fileJSON{},
			Pinned: cp.Pinned, Label: cp.Label, Pruned: cp.Pruned}
		for j, f := range cp.Files {
			out[i].Files = append(out[i].Files, fileJSON{Path: f.Path, Kind: string(cp.Kinds[j])})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type serveMessageJSON struct {
	ID   int64  `json:"id"`
	Turn int    `json:"turn"`
	Role string `json:"role"`
	Text string `json:"text"`
	Time string `json:"time"`
}

func (s *server) conversation(w http.ResponseWriter, r *http.Request) {
	msgs, err := s.c.Conversation(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]serveMessageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = serveMessageJSON{ID: m.ID, Turn: m.Turn, Role: m.Role, Text: m.Text, Time: m.Time.UTC().Format(time.RFC3339)}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) diff(w http.ResponseWriter, r *http.Request) {
	turn, err := parseTurn(r.URL.Query().Get("turn"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "turn: "+err.Error())
		return
	}
	diffs, skipped, err := s.c.Diff(r.Context(), turn)
	if err != nil {
		fail(w, err)
		return
	}
	if diffs == nil {
		diffs = []controller.FileDiff{}
	}
	if skipped == nil {
		skipped = []controller.Skip{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"turn": turn, "files": diffs, "skipped": skipped})
}

func (s *server) rewind(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turn   *int   `json:"turn"`
		Scope  string `json:"scope"`
		DryRun bool   `json:"dry_run"`
		Force  bool   `json:"force"`
	}
	if !decode(w, r, &req) {
		return
	}
	turn, ok := turnOf(w, req.Turn)
	if !ok {
		return
	}
	if req.Scope == "" {
		req.Scope = string(checkpoints.ScopeBoth)
	}
	sc, err := checkpoints.ParseScope(req.Scope)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.c.Rewind(r.Context(), turn, sc, controller.RewindOptions{DryRun: req.DryRun, Force: req.Force})
	if err != nil {
		if errors.Is(err, controller.ErrConflict) {
			writeJSON(w, http.StatusConflict, map[string]any{"error": oneLine(err), "result": resultJSON(res)})
			return
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resultJSON(res))
}

func (s *server) undo(w http.ResponseWriter, r *http.Request) { s.reverse(w, r, false) }

func (s *server) redo(w http.ResponseWriter, r *http.Request) { s.reverse(w, r, true) }

// reverse serves POST /api/undo and /api/redo. The body may be empty, or
// {"force": bool, "dry_run": bool, "op": ID} (op: an id from /api/history,
// 0 or absent for the latest). A conflict answers 409 with the error and
// the result, like a rewind's.
func (s *server) reverse(w http.ResponseWriter, r *http.Request, redo bool) {
	var req struct {
		Force  bool  `json:"force"`
		DryRun bool  `json:"dry_run"`
		Op     int64 `json:"op"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if b, err := io.ReadAll(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", tooBig.Limit))
		} else {
			httpError(w, http.StatusBadRequest, err.Error())
		}
		return
	} else if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &req); err != nil {
			httpError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
			return
		}
	}
	if req.Op < 0 {
		httpError(w, http.StatusBadRequest, `"op" must be an op id from /api/history`)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := controller.UndoOptions{Force: req.Force, DryRun: req.DryRun, Op: req.Op}
	var res controller.Result
	var err error
	if redo {
		res, err = s.c.Redo(r.Context(), o)
	} else {
		res, err = s.c.Undo(r.Context(), o)
	}
	if err != nil {
		if errors.Is(err, controller.ErrUndoConflict) || errors.Is(err, controller.ErrRedoConflict) {
			writeJSON(w, http.StatusConflict, map[string]any{"error": oneLine(err), "result": resultJSON(res)})
			return
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resultJSON(res))
}

// history serves GET /api/history: the op journal, newest first (the
// document `ckpt history --json` prints).
func (s *server) history(w http.ResponseWriter, r *http.Request) {
	h, err := s.c.History(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *server) fork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turn    *int   `json:"turn"`
		To      string `json:"to"`
		Restore bool   `json:"restore"`
		Force   bool   `json:"force"`
	}
	if !decode(w, r, &req) {
		return
	}
	turn, ok := turnOf(w, req.Turn)
	if !ok {
		return
	}
	if req.To != "" && !checkpoints.ValidSession(req.To) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("to %q: %v", req.To, checkpoints.ErrBadSession))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.c.ForkWith(r.Context(), turn, controller.ForkOptions{To: req.To, Restore: req.Restore, Force: req.Force})
	if err != nil {
		fail(w, err)
		return
	}
	rw := resultJSON(res.Rewind)
	writeJSON(w, http.StatusOK, forkJSON{Session: res.Session, From: s.c.Session(), Turn: turn, Prompt: rw.Prompt, Restored: rw.Restored, Deleted: rw.Deleted})
}

func (s *server) summarize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turn      *int   `json:"turn"`
		Direction string `json:"direction"`
		Text      string `json:"text"`
	}
	if !decode(w, r, &req) {
		return
	}
	turn, ok := turnOf(w, req.Turn)
	if !ok {
		return
	}
	dir := controller.Direction(req.Direction)
	if dir != controller.From && dir != controller.UpTo {
		httpError(w, http.StatusBadRequest, `"direction" must be "from" or "up_to"`)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		httpError(w, http.StatusBadRequest, `"text" must not be empty`)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.c.Summarize(r.Context(), turn, dir, req.Text)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resultJSON(res))
}

// fingerprint is a cheap summary of the session's files on disk: it moves
// when any process changes the session.
func (s *server) fingerprint() string {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		if e.Name() == "ops.lock" {
			continue
		}
		fi, err := os.Stat(filepath.Join(s.dir, e.Name()))
		if err != nil {
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

func (s *server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	ch := make(chan controller.Event, 64)
	cancel := s.c.Subscribe(func(e controller.Event) {
		select {
		case ch <- e:
		default: // a slow client loses events; the poll below still says "changed"
		}
	})
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": ckpt events\n\n")
	fl.Flush()
	poll := time.NewTicker(servePoll)
	defer poll.Stop()
	keep := time.NewTicker(serveKeepAlive)
	defer keep.Stop()
	last := s.fingerprint()
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-ch:
			last = s.fingerprint() // our own change: already reported
			if !send(e) {
				return
			}
		case <-poll.C:
			if fp := s.fingerprint(); fp != last {
				last = fp
				if !send(map[string]string{"kind": "changed", "session": s.c.Session()}) {
					return
				}
			}
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
