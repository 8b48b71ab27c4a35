package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// NewOpenAIChat starts a scripted OpenAI Chat Completions API on
// 127.0.0.1 (POST /v1/chat/completions or /chat/completions, streamed as
// server-sent events or not; GET /models answers an empty list) and
// returns it; Close stops it. GitHub Copilot CLI, OpenCode (its
// openai-compatible provider) and Cline (its OpenAI provider) speak it.
//
// A request is answered with the step of the scripted prompt it holds
// that follows the assistant messages already after that prompt: each
// step the server gave is one assistant message the agent sends back.
// A prompt is found in a user message's text when the text is the prompt
// or contains it on a line of its own (agents wrap prompts in tags or
// add context after them); the last such message wins.
func NewOpenAIChat(scripts map[string][]Step) (*Server, error) {
	return NewOpenAIChatWaiting(scripts, nil)
}

// NewOpenAIChatWaiting is NewOpenAIChat with before, when not nil, called
// before the server answers step n of a scripted prompt; the answer waits
// for it to return. A test waits there for what an agent started without
// waiting itself (a hook it runs detached), as a real model's latency
// would let it finish.
func NewOpenAIChatWaiting(scripts map[string][]Step, before func(prompt string, n int)) (*Server, error) {
	return startScripted(scripts, func(s *Server, w http.ResponseWriter, r *http.Request) {
		s.serveChat(w, r, before)
	})
}

// chatRequest is the part of a Chat Completions request the server reads.
type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Tools    []any         `json:"tools"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, a list of parts, or null
}

// texts returns the message's text: the string, or each text part.
func (m chatMessage) texts() []string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var out []string
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" {
			out = append(out, p.Text)
		}
	}
	return out
}

// holds reports whether text carries prompt: all of it, or one line of it.
func holds(text, prompt string) bool {
	if strings.TrimSpace(text) == prompt {
		return true
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == prompt {
			return true
		}
	}
	return false
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, before func(prompt string, n int)) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodGet && path == "/models":
		s.logf("%s %s: models", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	case r.Method == http.MethodPost && path == "/chat/completions":
	default:
		s.logf("%s %s: 404", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"not scripted"}}`)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"bad json"}}`)
		return
	}
	step, prompt, n, what := s.nextChat(req)
	if before != nil && prompt != "" {
		before(prompt, n)
	}
	s.logf("%s %s: %s", r.Method, r.URL.Path, what)
	s.mu.Lock()
	s.n++
	id := fmt.Sprintf("chatcmpl-fake%04d", s.n)
	s.mu.Unlock()
	if req.Stream {
		writeChatStream(w, id, req.Model, step)
	} else {
		writeChatJSON(w, id, req.Model, step)
	}
}

// nextChat finds the scripted prompt in the request and the step after
// the assistant messages that follow it. A request with no tools, or no
// scripted prompt, gets a plain text step.
func (s *Server) nextChat(req chatRequest) (st Step, prompt string, n int, what string) {
	if len(req.Tools) == 0 {
		return Step{Text: "Scripted session"}, "", 0, "no tools: plain text"
	}
	at := -1
	for i, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, text := range m.texts() {
			for p := range s.scripts {
				if holds(text, p) {
					at, prompt = i, p
				}
			}
		}
	}
	if at < 0 {
		return Step{Text: "No script for this prompt."}, "", 0, "unscripted prompt"
	}
	done := 0
	for _, m := range req.Messages[at+1:] {
		if m.Role == "assistant" {
			done++
		}
	}
	script := s.scripts[prompt]
	if done >= len(script) {
		return Step{Text: "Done."}, "", 0, fmt.Sprintf("%q past its script", prompt)
	}
	st = script[done]
	return st, prompt, done, fmt.Sprintf("%q step %d (%s)", prompt, done, stepName(st))
}

// chatChoice is the reply's message (or delta) and finish reason.
func chatChoice(id string, st Step) (map[string]any, string) {
	if st.Tool == "" {
		return map[string]any{"role": "assistant", "content": st.Text}, "stop"
	}
	input := st.Input
	if input == nil {
		input = map[string]any{}
	}
	args, _ := json.Marshal(input)
	call := map[string]any{
		"id": "call_" + strings.TrimPrefix(id, "chatcmpl-"), "type": "function",
		"function": map[string]any{"name": st.Tool, "arguments": string(args)},
	}
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}}, "tool_calls"
}

func chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
}

func writeChatJSON(w http.ResponseWriter, id, model string, st Step) {
	msg, finish := chatChoice(id, st)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   chatUsage(),
	})
}

// writeChatStream sends the reply as Chat Completions chunks: the role,
// the text or the tool call (whole, at index 0), the finish reason, a
// usage chunk, and [DONE].
func writeChatStream(w http.ResponseWriter, id, model string, st Step) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{},
		}
		if delta != nil {
			c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
		}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	msg, finish := chatChoice(id, st)
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if calls, ok := msg["tool_calls"].([]any); ok {
		call := calls[0].(map[string]any)
		call["index"] = 0
		chunk(map[string]any{"tool_calls": []any{call}}, nil, nil)
	} else {
		chunk(map[string]any{"content": msg["content"]}, nil, nil)
	}
	chunk(map[string]any{}, finish, nil)
	chunk(nil, nil, chatUsage())
	io.WriteString(w, "data: [DONE]\n\n")
}
