// Package acptest is a scripted ACP client for tests: it plays the
// editor, sending requests and serving the agent's (permissions, files,
// terminals) on the real file system.
package acptest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// New returns a client writing to w and reading r.
func New(t *testing.T, w io.Writer, r io.Reader) *Client {
	return &Client{t: t, w: w, r: bufio.NewReaderSize(r, 1<<20)}
}

// Client plays the editor: it sends requests and answers the agent's
// requests (permission: the first option that allows; files and
// terminals: on the real file system) until each request's response.
type Client struct {
	t *testing.T
	w io.Writer
	r *bufio.Reader
	// Next is the id of the last request Request sent.
	Next int
}

// Send writes line, one message, to the other side.
func (c *Client) Send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// Line reads the other side's next line.
func (c *Client) Line() string {
	c.t.Helper()
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading the proxy: %v", err)
	}
	if os.Getenv("ACPTEST_TRACE") != "" { // every line in the test log, to debug an agent
		c.t.Logf("<- %.300s", l)
	}
	return strings.TrimSuffix(l, "\n")
}

// Request sends method with params and returns the response line and the
// session/update lines that came before it.
func (c *Client) Request(method string, params any) (resp string, updates []string) {
	c.t.Helper()
	c.Next++
	id := c.Next
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	c.Send(string(b))
	return c.Until(fmt.Sprint(id))
}

// Until serves the agent's requests until the response to id (as JSON).
func (c *Client) Until(id string) (resp string, updates []string) {
	c.t.Helper()
	for {
		l := c.Line()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			c.t.Fatalf("not JSON from the proxy: %s", l)
		}
		switch {
		case m.Method == "session/update":
			updates = append(updates, l)
		case m.Method != "":
			c.reply(m.ID, c.serve(m.Method, m.Params))
		case string(m.ID) == id:
			return l, updates
		default:
			c.t.Fatalf("unexpected line from the proxy: %s", l)
		}
	}
}

// rpcError is an error answer to the agent's request.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (c *Client) reply(id json.RawMessage, result any) {
	c.t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
	if e, ok := result.(rpcError); ok {
		m = map[string]any{"jsonrpc": "2.0", "id": id, "error": e}
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.Send(string(b))
}

// serve does what an editor does for the agent's request.
func (c *Client) serve(method string, params json.RawMessage) any {
	c.t.Helper()
	var p struct {
		Path    string   `json:"path"`
		Content string   `json:"content"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Cwd     string   `json:"cwd"`
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		c.t.Fatal(err)
	}
	switch method {
	case "session/request_permission":
		for _, o := range p.Options {
			if strings.HasPrefix(o.Kind, "allow") {
				return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}
			}
		}
		c.t.Fatalf("no option allows: %s", params)
	case "fs/read_text_file":
		// A file that does not exist reads as empty, as a new buffer:
		// Gemini CLI 0.61 takes any error here for a failure.
		b, err := os.ReadFile(p.Path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rpcError{Code: -32603, Message: err.Error()}
		}
		return map[string]any{"content": string(b)}
	case "fs/write_text_file":
		if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
			c.t.Fatal(err)
		}
		return nil
	case "terminal/create":
		cmd := exec.Command(p.Command, p.Args...)
		cmd.Dir = p.Cwd
		if out, err := cmd.CombinedOutput(); err != nil {
			c.t.Fatalf("terminal %s %v: %v\n%s", p.Command, p.Args, err, out)
		}
		return map[string]any{"terminalId": "term-1"}
	}
	// An editor answers a method it does not know (Qwen Code 0.24.4 asks
	// for its own craft/drainMidTurnQueue) as JSON-RPC says.
	c.t.Logf("the test client does not serve %s: method not found", method)
	return rpcError{Code: -32601, Message: "Method not found: " + method}
}

// Prompt sends a session/prompt of text and returns its response and the
// agent's message text.
func (c *Client) Prompt(sid, text string) (resp, said string) {
	c.t.Helper()
	resp, updates := c.Request("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]any{{"type": "text", "text": text}}})
	for _, u := range updates {
		var m struct {
			Params struct {
				Update struct {
					Kind    string `json:"sessionUpdate"`
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(u), &m)
		if m.Params.Update.Kind == "agent_message_chunk" {
			said += m.Params.Update.Content.Text
		}
	}
	return resp, said
}
