package fakemodel

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGeminiScript walks a script the way the Gemini CLI does: a routing
// call without tools that wants JSON of a schema, then streamed calls whose
// contents grow by a function call and its response per step.
func TestGeminiScript(t *testing.T) {
	t.Parallel()
	s, err := NewGemini(map[string][]Step{
		"do it": {
			{Tool: "write_file", Input: map[string]any{"file_path": "/w/a.txt", "content": "a\n"}},
			{Text: "Done it."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// The routing call: JSON with each property of its schema.
	type response struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string `json:"text"`
					FunctionCall *struct {
						Name string         `json:"name"`
						Args map[string]any `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	var resp response
	body := post(t, s.URL+"/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"do it"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{
		"why":{"type":"STRING"},"score":{"type":"INTEGER"},"who":{"type":"STRING","enum":["user","model"]}}}}}`)
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	var route map[string]any
	if err := json.Unmarshal([]byte(resp.Candidates[0].Content.Parts[0].Text), &route); err != nil {
		t.Fatalf("routing answer %q: %v", resp.Candidates[0].Content.Parts[0].Text, err)
	}
	if route["why"] != "scripted" || route["score"] != 1.0 || route["who"] != "user" {
		t.Errorf("routing answer = %v", route)
	}

	tools := `"tools":[{"functionDeclarations":[{"name":"write_file"}]}]`
	contents := `{"role":"user","parts":[{"text":"<session_context/>"},{"text":"do it"}]}`
	call := func(contents string) (text, fn string, args map[string]any) {
		t.Helper()
		evs := sseData(t, post(t, s.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[`+contents+`],`+tools+`}`))
		if len(evs) != 1 {
			t.Fatalf("%d events, want 1", len(evs))
		}
		b, _ := json.Marshal(evs[0])
		var resp response // fresh: Unmarshal would keep the last call's parts
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		p := resp.Candidates[0].Content.Parts[0]
		if p.FunctionCall != nil {
			return "", p.FunctionCall.Name, p.FunctionCall.Args
		}
		return p.Text, "", nil
	}
	if _, fn, args := call(contents); fn != "write_file" || args["file_path"] != "/w/a.txt" || args["content"] != "a\n" {
		t.Errorf("step 0: %s %v", fn, args)
	}
	contents += `,{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{"output":"ok"}}}]}`
	if text, fn, _ := call(contents); fn != "" || text != "Done it." {
		t.Errorf("step 1: %q %q", fn, text)
	}
	if log := s.Log(); len(log) != 3 || !strings.Contains(log[2], `"do it" step 1 (text)`) {
		t.Errorf("log = %q", log)
	}
}
