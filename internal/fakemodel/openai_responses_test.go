package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends body to url and returns the response's body.
func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// sseData returns the JSON documents of a server-sent event stream's data
// lines, in order.
func sseData(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		data, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("data line %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// TestResponsesScript walks a script the way Codex does: each request
// carries the conversation so far, and the server answers the step after
// the tool outputs that follow the prompt, as a function call, a freeform
// tool call when the tool is offered as one, or the final message.
func TestResponsesScript(t *testing.T) {
	t.Parallel()
	s, err := NewResponses(map[string][]Step{
		"do it": {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** End Patch\n"}},
			{Tool: "exec_command", Input: map[string]any{"cmd": "ls"}},
			{Text: "Done it."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools := `"tools":[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}]`
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]}`
	outputs := []string{
		`{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"..."},{"type":"custom_tool_call_output","call_id":"c1","output":"ok"}`,
		`{"type":"function_call","call_id":"c2","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c2","output":"ok"}`,
	}
	// done returns the output item of the response.completed event.
	done := func(n int) map[string]any {
		t.Helper()
		input := user
		for _, o := range outputs[:n] {
			input += "," + o
		}
		evs := sseData(t, post(t, s.URL+"/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[`+input+`]}`))
		last := evs[len(evs)-1]
		if last["type"] != "response.completed" {
			t.Fatalf("last event %v, want response.completed", last["type"])
		}
		for i, ev := range evs {
			if int(ev["sequence_number"].(float64)) != i {
				t.Errorf("event %d has sequence_number %v", i, ev["sequence_number"])
			}
		}
		out := last["response"].(map[string]any)["output"].([]any)
		if len(out) != 1 {
			t.Fatalf("output = %v, want one item", out)
		}
		return out[0].(map[string]any)
	}
	if it := done(0); it["type"] != "custom_tool_call" || it["name"] != "apply_patch" || it["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("step 0: %v", it)
	}
	if it := done(1); it["type"] != "function_call" || it["name"] != "exec_command" || it["arguments"] != `{"cmd":"ls"}` {
		t.Errorf("step 1: %v", it)
	}
	it := done(2)
	content, _ := it["content"].([]any)
	if it["type"] != "message" || len(content) != 1 || content[0].(map[string]any)["text"] != "Done it." {
		t.Errorf("step 2: %v", it)
	}
	if log := s.Log(); len(log) != 3 || !strings.Contains(log[2], `"do it" step 2 (text)`) {
		t.Errorf("log = %q", log)
	}
}
