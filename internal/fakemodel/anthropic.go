// Package fakemodel is a scripted model server for tests that drive a real
// agent CLI offline. It speaks enough of the Anthropic Messages API
// (POST /v1/messages, streamed as server-sent events or not) for Claude
// Code: each user prompt has a script of steps, a step being one tool call
// or the final text, and the server answers a request with the step that
// follows the tool results already in it.
//
// Agents rewrite the conversation they send (Claude Code merges adjacent
// user messages, puts tool results first and appends system-reminder text
// blocks), so the server keys its state on the prompt text it finds, not on
// message positions. Requests it has no script for (a title or summary
// call, token counting, anything else) get a short harmless answer.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Step is one model reply: a tool call when Tool is set, else the text.
type Step struct {
	Tool  string         // tool name, e.g. "Write"
	Input map[string]any // tool input
	Text  string         // the final answer when Tool is empty
}

// Server is a scripted Anthropic Messages API on 127.0.0.1. It is safe for
// concurrent use.
type Server struct {
	URL string // base URL, e.g. http://127.0.0.1:PORT

	mu      sync.Mutex
	scripts map[string][]Step // by prompt text
	log     []string
	n       int

	srv *http.Server
	ln  net.Listener
}

// NewAnthropic starts a server answering the prompts in scripts (keyed by
// the exact prompt text) and returns it; Close stops it.
func NewAnthropic(scripts map[string][]Step) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), scripts: scripts, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Log returns one line per request served: method, path and what it was
// answered with.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	s.log = append(s.log, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// request is the part of a Messages API request the server reads.
type request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Tools    []tool    `json:"tools"`
	Messages []message `json:"messages"`
}

type tool struct {
	Name string `json:"name"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (m message) blocks() []block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	json.Unmarshal(m.Content, &bs)
	return bs
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.logf("%s %s: count", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens": 100}`)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	default:
		s.logf("%s %s: 404", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}`)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	step, what := s.next(req)
	s.logf("%s %s: %s", r.Method, r.URL.Path, what)
	s.mu.Lock()
	s.n++
	id := fmt.Sprintf("msg_fake%04d", s.n)
	s.mu.Unlock()
	if req.Stream {
		writeStream(w, id, req.Model, step)
	} else {
		writeJSON(w, id, req.Model, step)
	}
}

// next finds the scripted prompt in the request and the step after the
// tool results that follow it. A request with no tools, or no scripted
// prompt, gets a plain text step.
func (s *Server) next(req request) (Step, string) {
	if len(req.Tools) == 0 {
		return Step{Text: "Scripted session"}, "no tools: plain text"
	}
	at, prompt := -1, ""
	for i, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type != "text" {
				continue
			}
			if _, ok := s.scripts[strings.TrimSpace(b.Text)]; ok {
				at, prompt = i, strings.TrimSpace(b.Text)
			}
		}
	}
	if at < 0 {
		return Step{Text: "No script for this prompt."}, "unscripted prompt"
	}
	results := 0
	for _, m := range req.Messages[at+1:] {
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				results++
			}
		}
	}
	script := s.scripts[prompt]
	if results >= len(script) {
		return Step{Text: "Done."}, fmt.Sprintf("%q past its script", prompt)
	}
	st := script[results]
	return st, fmt.Sprintf("%q step %d (%s)", prompt, results, stepName(st))
}

func stepName(st Step) string {
	if st.Tool != "" {
		return st.Tool
	}
	return "text"
}

// content is the reply's content blocks and stop reason.
func content(id string, st Step) ([]map[string]any, string) {
	if st.Tool == "" {
		return []map[string]any{{"type": "text", "text": st.Text}}, "end_turn"
	}
	input := st.Input
	if input == nil {
		input = map[string]any{}
	}
	return []map[string]any{
		{"type": "tool_use", "id": "toolu_" + strings.TrimPrefix(id, "msg_"), "name": st.Tool, "input": input},
	}, "tool_use"
}

func usage() map[string]any {
	return map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func writeJSON(w http.ResponseWriter, id, model string, st Step) {
	blocks, stop := content(id, st)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage(),
	})
}

// writeStream sends the reply as the Messages API's event stream: the
// message start, each block (text as one text delta, a tool call's input
// as one JSON delta), the stop reason, the end.
func writeStream(w http.ResponseWriter, id, model string, st Step) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ev := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(),
	}})
	blocks, stop := content(id, st)
	for i, b := range blocks {
		if b["type"] == "text" {
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		} else {
			in, _ := json.Marshal(b["input"])
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}
