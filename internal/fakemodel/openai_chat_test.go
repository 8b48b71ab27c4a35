package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// chatReply is what a client assembles from one reply: the text, and
// each tool call's name and arguments.
type chatReply struct {
	text   string
	calls  []string // "name args"
	finish string
}

func postChat(t *testing.T, url string, stream bool, messages ...map[string]any) chatReply {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"model": "gpt-4.1", "stream": stream, "messages": messages,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "create"}}},
	})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type call struct {
		Index    int `json:"index"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var r chatReply
	if !stream {
		var doc struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []call  `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || len(doc.Choices) != 1 {
			t.Fatalf("reply: %v, %+v", err, doc)
		}
		c := doc.Choices[0]
		if c.Message.Content != nil {
			r.text = *c.Message.Content
		}
		for _, tc := range c.Message.ToolCalls {
			r.calls = append(r.calls, tc.Function.Name+" "+tc.Function.Arguments)
		}
		r.finish = c.FinishReason
		return r
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []call `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, c := range chunk.Choices {
			r.text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				r.calls = append(r.calls, tc.Function.Name+" "+tc.Function.Arguments)
			}
			if c.FinishReason != nil {
				r.finish = *c.FinishReason
			}
		}
	}
	if !done {
		t.Error("stream without [DONE]")
	}
	return r
}

// TestOpenAIChat checks the scripted steps over both reply forms: the
// prompt found inside a longer user message, each assistant message after
// it one step done, and the waiting hook called before each step.
func TestOpenAIChat(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var waited []string
	srv, err := NewOpenAIChatWaiting(map[string][]Step{
		"make it": {
			{Tool: "create", Input: map[string]any{"path": "/w/a.txt"}},
			{Text: "Made."},
		},
	}, func(prompt string, n int) {
		mu.Lock()
		waited = append(waited, fmt.Sprintf("%s/%d", prompt, n))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	system := map[string]any{"role": "system", "content": "You are an agent."}
	user := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "<task>\nmake it\n</task>"},
		map[string]any{"type": "text", "text": "<environment_details>none</environment_details>"},
	}}
	asked := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": "call_1", "type": "function", "function": map[string]any{"name": "create", "arguments": `{"path":"/w/a.txt"}`}}}}
	result := map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "created"}
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			r := postChat(t, srv.URL, stream, system, user)
			if len(r.calls) != 1 || r.calls[0] != `create {"path":"/w/a.txt"}` || r.finish != "tool_calls" {
				t.Errorf("step 0: %+v, want the create call", r)
			}
			r = postChat(t, srv.URL, stream, system, user, asked, result)
			if r.text != "Made." || len(r.calls) != 0 || r.finish != "stop" {
				t.Errorf("step 1: %+v, want the text", r)
			}
			r = postChat(t, srv.URL, stream, system, user, asked, result, map[string]any{"role": "assistant", "content": "Made."})
			if r.text != "Done." {
				t.Errorf("past the script: %+v, want Done.", r)
			}
			r = postChat(t, srv.URL, stream, map[string]any{"role": "user", "content": "something else"})
			if r.text != "No script for this prompt." {
				t.Errorf("unscripted: %+v", r)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(waited, ","); got != "make it/0,make it/1,make it/0,make it/1" {
		t.Errorf("waited for %s", got)
	}
}
