package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// NewResponses starts a server speaking enough of the OpenAI Responses API
// (POST /v1/responses, streamed as server-sent events) for the Codex CLI's
// `codex exec`, answering the prompts in scripts the way NewAnthropic does;
// Close stops it.
//
// A step's tool call becomes a function_call item whose arguments are
// Input as JSON, or, when the request offers the tool as a freeform
// (type "custom") tool, a custom_tool_call whose input is Input["input"]:
// Codex offers apply_patch that way. Each tool output in the request after
// the prompt's user message (function_call_output, custom_tool_call_output)
// counts as one step done.
func NewResponses(scripts map[string][]Step) (*Server, error) {
	return startScripted(scripts, (*Server).serveResponses)
}

// startScripted listens on a loopback port and serves h.
func startScripted(scripts map[string][]Step, h func(*Server, http.ResponseWriter, *http.Request)) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), scripts: scripts, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(s, w, r) })}
	go s.srv.Serve(ln)
	return s, nil
}

// responsesRequest is the part of a Responses API request the server reads.
type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Tools  []responsesTool `json:"tools"`
	Input  []responsesItem `json:"input"`
}

type responsesTool struct {
	Type string `json:"type"` // "function", "custom", ...
	Name string `json:"name"`
}

type responsesItem struct {
	Type    string          `json:"type"` // "message", "function_call_output", ...
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of parts
}

// texts is the text of a message item's parts.
func (it responsesItem) texts() []string {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(it.Content, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		s.logf("%s %s: 404", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"not scripted"}}`)
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"bad json"}}`)
		return
	}
	step, what := s.nextResponses(req)
	s.mu.Lock()
	s.n++
	id := fmt.Sprintf("resp_fake%04d", s.n)
	s.mu.Unlock()
	s.logf("%s %s: %s", r.Method, r.URL.Path, what)
	item := responsesOutput(id, step, req.Tools)
	resp := func(status string, output []any) map[string]any {
		return map[string]any{
			"id": id, "object": "response", "created_at": 1700000000, "status": status, "model": req.Model,
			"output": output, "usage": map[string]any{
				"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": 110,
			},
		}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp("completed", []any{item}))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	seq := 0
	ev := func(name string, data map[string]any) {
		data["type"] = name
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{})})
	ev("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	if item["type"] == "message" {
		ev("response.output_text.delta", map[string]any{"output_index": 0, "content_index": 0, "item_id": item["id"], "delta": step.Text})
	}
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	ev("response.completed", map[string]any{"response": resp("completed", []any{item})})
}

// nextResponses finds the last scripted prompt among the request's user
// messages and the step after the tool outputs that follow it.
func (s *Server) nextResponses(req responsesRequest) (Step, string) {
	if len(req.Tools) == 0 {
		return Step{Text: "Scripted session"}, "no tools: plain text"
	}
	at, prompt := -1, ""
	for i, it := range req.Input {
		if it.Type != "message" && it.Type != "" || it.Role != "user" {
			continue
		}
		for _, t := range it.texts() {
			if _, ok := s.scripts[strings.TrimSpace(t)]; ok {
				at, prompt = i, strings.TrimSpace(t)
			}
		}
	}
	if at < 0 {
		return Step{Text: "No script for this prompt."}, "unscripted prompt"
	}
	done := 0
	for _, it := range req.Input[at+1:] {
		if strings.HasSuffix(it.Type, "_call_output") {
			done++
		}
	}
	script := s.scripts[prompt]
	if done >= len(script) {
		return Step{Text: "Done."}, fmt.Sprintf("%q past its script", prompt)
	}
	st := script[done]
	return st, fmt.Sprintf("%q step %d (%s)", prompt, done, stepName(st))
}

// responsesOutput is the output item for st: an assistant message, a
// function call, or a freeform tool call when tools offers st.Tool as one.
func responsesOutput(id string, st Step, tools []responsesTool) map[string]any {
	n := strings.TrimPrefix(id, "resp_")
	if st.Tool == "" {
		return map[string]any{
			"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}},
		}
	}
	for _, t := range tools {
		if t.Name == st.Tool && t.Type == "custom" {
			in, _ := st.Input["input"].(string)
			return map[string]any{
				"type": "custom_tool_call", "id": "ctc_" + n, "call_id": "call_" + n, "name": st.Tool,
				"input": in, "status": "completed",
			}
		}
	}
	input := st.Input
	if input == nil {
		input = map[string]any{}
	}
	args, _ := json.Marshal(input)
	return map[string]any{
		"type": "function_call", "id": "fc_" + n, "call_id": "call_" + n, "name": st.Tool,
		"arguments": string(args), "status": "completed",
	}
}
