package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
)

// message is an error on one line.
func message(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// fail maps a controller error to a status code.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, controller.ErrNoTurn), errors.Is(err, controller.ErrNotFound), errors.Is(err, controller.ErrNoStep):
		code = http.StatusNotFound
	case errors.Is(err, controller.ErrConflict), errors.Is(err, controller.ErrBusy),
		errors.Is(err, controller.ErrSessionExists), errors.Is(err, controller.ErrNothingToUndo),
		errors.Is(err, controller.ErrNotInEffect):
		code = http.StatusConflict
	case errors.Is(err, controller.ErrBadSession), errors.Is(err, controller.ErrPruned),
		errors.Is(err, controller.ErrStepScope):
		code = http.StatusBadRequest
	}
	if code == http.StatusInternalServerError {
		h.log.Error("httpapi: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	h.error(w, code, message(err))
}

// body reads a request body, bounded in size and in the time to read it;
// on failure it has written the response.
func (h *handler) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	h.deadline(w, false, h.o.BodyTimeout)
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case err == nil:
		return b, true
	case errors.As(err, &tooBig):
		h.error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", tooBig.Limit))
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		h.error(w, http.StatusRequestTimeout, "body not received in time")
	default:
		h.error(w, http.StatusBadRequest, "read body: "+err.Error())
	}
	return nil, false
}

// decode reads a JSON object body into v; on failure it has written the
// response. Unknown fields and trailing data are refused.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, ok := h.body(w, r)
	if !ok {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("trailing data after the JSON object")
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		h.error(w, http.StatusBadRequest, "empty body: a JSON object is required")
		return false
	case err != nil:
		h.error(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return false
	}
	return true
}

// turnOf checks a required turn field.
func (h *handler) turnOf(w http.ResponseWriter, turn *int) (int, bool) {
	if turn == nil || *turn < 0 {
		h.error(w, http.StatusBadRequest, `"turn" must be a whole number ≥ 0`)
		return 0, false
	}
	return *turn, true
}

func (h *handler) sessions(w http.ResponseWriter, r *http.Request) {
	if !h.o.Sessions {
		h.error(w, http.StatusNotFound, "listing sessions is not enabled on this server")
		return
	}
	out, err := h.c.Store().Sessions(r.Context(), "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewSessions(out))
}

// session serves GET /api/session: which session this server serves, and
// its workspace, so a page can say what it is about to change.
func (h *handler) session(w http.ResponseWriter, r *http.Request) {
	h.writeJSON(w, http.StatusOK, map[string]string{"session": h.c.Session(), "workspace": h.c.WorkspaceRoot()})
}

func (h *handler) checkpoints(w http.ResponseWriter, r *http.Request) {
	cps, _, err := h.c.Checkpoints(r.Context(), controller.ListOptions{Steps: true})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewCheckpoints(cps))
}

func (h *handler) conversation(w http.ResponseWriter, r *http.Request) {
	msgs, err := h.c.Conversation(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewMessages(msgs))
}

func (h *handler) diff(w http.ResponseWriter, r *http.Request) {
	s := r.URL.Query().Get("turn")
	turn, err := strconv.Atoi(s)
	if err != nil || turn < 0 || strconv.Itoa(turn) != s {
		h.error(w, http.StatusBadRequest, fmt.Sprintf("turn must be a whole number ≥ 0, got %q", s))
		return
	}
	step := 0
	if s := r.URL.Query().Get("step"); s != "" {
		if step, err = strconv.Atoi(s); err != nil || step < 1 || strconv.Itoa(step) != s {
			h.error(w, http.StatusBadRequest, fmt.Sprintf("step must be a whole number ≥ 1, got %q", s))
			return
		}
	}
	pt := controller.Target{Turn: turn, Step: step}
	diffs, skipped, err := h.c.Diff(r.Context(), pt)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewDiff(pt, diffs, skipped))
}

func (h *handler) rewind(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turn *int `json:"turn"`
		// Step: rewind code to just before the turn's Step-th tool call
		// (0 or absent: the turn's start).
		Step   int    `json:"step"`
		Scope  string `json:"scope"`
		DryRun bool   `json:"dry_run"`
		Force  bool   `json:"force"`
	}
	if !h.decode(w, r, &req) {
		return
	}
	turn, ok := h.turnOf(w, req.Turn)
	if !ok {
		return
	}
	if req.Step < 0 {
		h.error(w, http.StatusBadRequest, `"step" must be a whole number ≥ 1 (0 or absent: the turn's start)`)
		return
	}
	if req.Scope == "" {
		req.Scope = string(controller.ScopeBoth)
		if req.Step > 0 {
			req.Scope = string(controller.ScopeCode) // a step rewinds code only
		}
	}
	var sc controller.Scope
	if err := sc.UnmarshalText([]byte(req.Scope)); err != nil {
		h.error(w, http.StatusBadRequest, message(err))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.c.Rewind(r.Context(), controller.Target{Turn: turn, Step: req.Step}, sc, controller.RewindOptions{DryRun: req.DryRun, Force: req.Force})
	if err != nil {
		if errors.Is(err, controller.ErrConflict) {
			h.writeJSON(w, http.StatusConflict, map[string]any{"error": message(err), "result": wire.NewResult(res)})
			return
		}
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewResult(res))
}

func (h *handler) undo(w http.ResponseWriter, r *http.Request) { h.reverse(w, r, false) }

func (h *handler) redo(w http.ResponseWriter, r *http.Request) { h.reverse(w, r, true) }

// reverse serves POST /api/undo and /api/redo. The body may be empty, or
// {"force": bool, "dry_run": bool, "op": ID} (op: an id from /api/history,
// 0 or absent for the latest). A conflict answers 409 with the error and
// the result, like a rewind's.
func (h *handler) reverse(w http.ResponseWriter, r *http.Request, redo bool) {
	var req struct {
		Force  bool  `json:"force"`
		DryRun bool  `json:"dry_run"`
		Op     int64 `json:"op"`
	}
	b, ok := h.body(w, r)
	if !ok {
		return
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &req); err != nil {
			h.error(w, http.StatusBadRequest, "bad JSON: "+err.Error())
			return
		}
	}
	if req.Op < 0 {
		h.error(w, http.StatusBadRequest, `"op" must be an op id from /api/history`)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := controller.RewindOptions{Force: req.Force, DryRun: req.DryRun, Op: req.Op}
	var res controller.Result
	var err error
	if redo {
		res, err = h.c.Redo(r.Context(), o)
	} else {
		res, err = h.c.Undo(r.Context(), o)
	}
	if err != nil {
		if errors.Is(err, controller.ErrConflict) {
			h.writeJSON(w, http.StatusConflict, map[string]any{"error": message(err), "result": wire.NewResult(res)})
			return
		}
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewResult(res))
}

// history serves GET /api/history: the op journal, newest first (the
// document `ckpt history --json` prints).
func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	hist, err := h.c.History(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewHistory(hist))
}

func (h *handler) fork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turn    *int   `json:"turn"`
		To      string `json:"to"`
		Restore bool   `json:"restore"`
		Force   bool   `json:"force"`
	}
	if !h.decode(w, r, &req) {
		return
	}
	turn, ok := h.turnOf(w, req.Turn)
	if !ok {
		return
	}
	if req.To != "" && !controller.ValidSession(req.To) {
		h.error(w, http.StatusBadRequest, fmt.Sprintf("to %q: %v", req.To, controller.ErrBadSession))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.c.Fork(r.Context(), turn, controller.ForkOptions{To: req.To, Restore: req.Restore, Force: req.Force})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewFork(h.c.Session(), turn, res))
}

func (h *handler) summarize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Turn      *int   `json:"turn"`
		Direction string `json:"direction"`
		Text      string `json:"text"`
	}
	if !h.decode(w, r, &req) {
		return
	}
	turn, ok := h.turnOf(w, req.Turn)
	if !ok {
		return
	}
	upTo := req.Direction == "up_to"
	if req.Direction != "from" && !upTo {
		h.error(w, http.StatusBadRequest, `"direction" must be "from" or "up_to"`)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		h.error(w, http.StatusBadRequest, `"text" must not be empty`)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.c.Summarize(r.Context(), turn, upTo, req.Text)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.NewResult(res))
}
