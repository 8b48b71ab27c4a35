package acpproxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tiny ACP agent the tests run behind the proxy: this test binary
// re-executed with $ACPPROXY_TEST_AGENT set. Each prompt's text is a
// script of ";"-separated actions:
//
//	write PATH=TEXT   a tool call that asks the client to write PATH
//	self PATH=TEXT    the agent writes PATH itself
//	shell CMD         a tool call that runs CMD in a client terminal
//	fail              the prompt fails with the agent's own error
//	wait              wait for session/cancel, then stop as cancelled
//
// It answers every prompt with a message "done: TEXT" (or the raw
// session/cancel line it received) and stopReason end_turn, and
// session/fork with a new session, fork-1, fork-2, ...
func TestMain(m *testing.M) {
	if os.Getenv("ACPPROXY_TEST_AGENT") != "" {
		if err := runAgent(); err != nil {
			fmt.Fprintln(os.Stderr, "test agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// initializeResult is sent byte for byte as the agent's answer to
// initialize: spacing, key order and escapes a re-encoding would change.
const initializeResult = `{"id":0,  "jsonrpc":"2.0","result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false,"sessionCapabilities":{"fork":{}}},"authMethods":[],"_meta":{"note":"caf\u00e9 <b>"}}}`

// agentError is the agent's own error for a "fail" prompt.
const agentError = `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"model overloaded","data":{"retryAfter":3}}}`

type agent struct {
	in    *bufio.Reader
	out   *os.File
	cwd   string
	sid   string // the session of the prompt in flight
	forks int
	next  int
	calls int
}

func runAgent() error {
	a := &agent{in: bufio.NewReaderSize(os.Stdin, 1<<20), out: os.Stdout}
	for {
		line, err := a.in.ReadBytes('\n')
		if err != nil {
			return nil // the client is gone
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return err
		}
		switch m.Method {
		case "initialize":
			a.send(initializeResult)
		case "session/new":
			var p struct {
				Cwd string `json:"cwd"`
			}
			json.Unmarshal(m.Params, &p)
			a.cwd, a.sid = p.Cwd, "sess/1"
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"sess/1"}}`, m.ID))
			a.update(`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"web","description":"search the web","input":{"hint":"query"}},{"name":"undo","description":"the agent's own undo"}]}`)
		case "session/fork":
			// The forks are sessions fork-1, fork-2, ...
			a.forks++
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"fork-%d"}}`, m.ID, a.forks))
		case "session/prompt":
			if err := a.prompt(m.ID, m.Params); err != nil {
				return err
			}
		case "x/echo":
			b, _ := json.Marshal(string(line))
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"raw":%s}}`, m.ID, b))
		}
	}
}

func (a *agent) send(line string) { fmt.Fprintln(a.out, line) }

func (a *agent) update(u string) {
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + a.sid + `","update":` + u + `}}`)
}

// call sends the client a request and reads until its response, which it
// returns.
func (a *agent) call(method string, params any) (json.RawMessage, error) {
	a.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": a.next, "method": method, "params": params})
	a.send(string(b))
	for {
		line, err := a.in.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &r) == nil && r.ID == a.next {
			if len(r.Error) > 0 {
				return nil, fmt.Errorf("%s: %s", method, r.Error)
			}
			return r.Result, nil
		}
	}
}

func (a *agent) toolCall(kind, title string) string {
	a.calls++
	id := fmt.Sprintf("call_%d", a.calls)
	b, _ := json.Marshal(map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": title, "kind": kind, "status": "pending", "content": []any{}})
	a.update(string(b))
	return id
}

func (a *agent) prompt(id, params json.RawMessage) error {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	}
	json.Unmarshal(params, &p)
	a.sid = p.SessionID
	text := p.Prompt[0].Text
	reply := "done: " + text
	for _, act := range strings.Split(text, ";") {
		verb, arg, _ := strings.Cut(strings.TrimLeft(act, " "), " ")
		switch verb {
		case "write", "self":
			path, content, _ := strings.Cut(arg, "=")
			abs := filepath.Join(a.cwd, path)
			if verb == "self" {
				if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
					return err
				}
				continue
			}
			call := a.toolCall("edit", "Write "+path)
			res, err := a.call("session/request_permission", map[string]any{"sessionId": a.sid,
				"toolCall": map[string]any{"toolCallId": call},
				"options":  []map[string]any{{"optionId": "allow", "name": "Allow", "kind": "allow_once"}, {"optionId": "reject", "name": "Reject", "kind": "reject_once"}}})
			if err != nil {
				return err
			}
			if !strings.Contains(string(res), `"allow"`) {
				return fmt.Errorf("permission: %s", res)
			}
			a.update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress"}`, call))
			if _, err := a.call("fs/write_text_file", map[string]any{"sessionId": a.sid, "path": abs, "content": content}); err != nil {
				reply += "\nwrite refused: " + err.Error()
			}
			a.update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","content":[{"type":"content","content":{"type":"text","text":"written"}}]}`, call))
		case "shell":
			call := a.toolCall("execute", arg)
			a.update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress"}`, call))
			if _, err := a.call("terminal/create", map[string]any{"sessionId": a.sid, "command": "sh", "args": []string{"-c", arg}, "cwd": a.cwd}); err != nil {
				return err
			}
			a.update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed"}`, call))
		case "fail":
			a.send(fmt.Sprintf(agentError, id))
			return nil
		case "wait":
			line, err := a.in.ReadBytes('\n')
			if err != nil {
				return err
			}
			reply = strings.TrimSpace(string(line))
			b, _ := json.Marshal(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": reply}})
			a.update(string(b))
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"cancelled"}}`, id))
			return nil
		}
	}
	b, _ := json.Marshal(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": reply}})
	a.update(string(b))
	a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, id))
	return nil
}
