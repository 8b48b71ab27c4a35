package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// NewGemini starts a server speaking enough of the Gemini API
// (POST /v1beta/models/MODEL:streamGenerateContent?alt=sse and
// :generateContent) for the Gemini CLI's `gemini -p`, answering the
// prompts in scripts the way NewAnthropic does; Close stops it.
//
// A step's tool call becomes a functionCall part with Input as its args.
// Each functionResponse part after the prompt's user content counts as one
// step done. A request that offers no tools (the CLI's model routing and
// next-speaker checks) gets, when it asks for JSON, an object with every
// property its schema names set to a plain value of its type (the first of
// an enum), else a short text.
func NewGemini(scripts map[string][]Step) (*Server, error) {
	return startScripted(scripts, (*Server).serveGemini)
}

// geminiRequest is the part of a generateContent request the server reads.
type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionCall     json.RawMessage `json:"functionCall"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMIMEType   string        `json:"responseMimeType"`
		ResponseJSONSchema *geminiSchema `json:"responseJsonSchema"`
		ResponseSchema     *geminiSchema `json:"responseSchema"`
	} `json:"generationConfig"`
}

// geminiSchema is the part of a response schema the server fills in.
type geminiSchema struct {
	Type       string                  `json:"type"`
	Enum       []any                   `json:"enum"`
	Properties map[string]geminiSchema `json:"properties"`
}

// sample is a plain value that fits sc.
func (sc geminiSchema) sample() any {
	if len(sc.Enum) > 0 {
		return sc.Enum[0]
	}
	switch strings.ToLower(sc.Type) {
	case "string":
		return "scripted"
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		obj := map[string]any{}
		for k, p := range sc.Properties {
			obj[k] = p.sample()
		}
		return obj
	}
	return nil
}

func (r geminiRequest) hasTools() bool {
	for _, t := range r.Tools {
		if len(t.FunctionDeclarations) > 0 {
			return true
		}
	}
	return false
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	_, method, _ := strings.Cut(r.URL.Path, ":")
	if r.Method != http.MethodPost || (method != "streamGenerateContent" && method != "generateContent") {
		s.logf("%s %s: 404", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`)
		return
	}
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`)
		return
	}
	step, what := s.nextGemini(req)
	s.mu.Lock()
	s.n++
	id := fmt.Sprintf("fake%04d", s.n)
	s.mu.Unlock()
	s.logf("%s %s: %s", r.Method, r.URL.Path, what)

	part := map[string]any{"text": step.Text}
	if step.Tool != "" {
		args := step.Input
		if args == nil {
			args = map[string]any{}
		}
		part = map[string]any{"functionCall": map[string]any{"name": step.Tool, "args": args}}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "scripted", "responseId": id,
	}
	b, _ := json.Marshal(resp)
	if method == "generateContent" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
}

// nextGemini finds the last scripted prompt among the request's user
// contents and the step after the function responses that follow it.
func (s *Server) nextGemini(req geminiRequest) (Step, string) {
	if !req.hasTools() {
		if req.GenerationConfig.ResponseMIMEType == "application/json" {
			sc := req.GenerationConfig.ResponseJSONSchema
			if sc == nil {
				sc = req.GenerationConfig.ResponseSchema
			}
			v := any(map[string]any{})
			if sc != nil {
				v = sc.sample()
			}
			b, _ := json.Marshal(v)
			return Step{Text: string(b)}, "no tools: JSON " + string(b)
		}
		return Step{Text: "Scripted session"}, "no tools: plain text"
	}
	at, prompt := -1, ""
	for i, c := range req.Contents {
		if c.Role != "user" {
			continue
		}
		for _, p := range c.Parts {
			if _, ok := s.scripts[strings.TrimSpace(p.Text)]; ok {
				at, prompt = i, strings.TrimSpace(p.Text)
			}
		}
	}
	if at < 0 {
		return Step{Text: "No script for this prompt."}, "unscripted prompt"
	}
	done := 0
	for _, c := range req.Contents[at+1:] {
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 {
				done++
			}
		}
	}
	script := s.scripts[prompt]
	if done >= len(script) {
		return Step{Text: "Done."}, fmt.Sprintf("%q past its script", prompt)
	}
	st := script[done]
	return st, fmt.Sprintf("%q step %d (%s)", prompt, done, stepName(st))
}
