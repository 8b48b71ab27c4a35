package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller/mcpserver"
)

// TestStdioAnswersEveryRequestBeforeEOF: a client that writes its
// requests and closes its end at once (printf '…' | ckpt mcp) still gets
// an answer to each before the server stops.
func TestStdioAnswersEveryRequestBeforeEOF(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_checkpoints","arguments":{}}}`,
	}, "\n") + "\n"
	ctx := context.Background()
	var out bytes.Buffer
	if err := mcpserver.New(e.c, mcpserver.Options{}).Run(ctx, mcpserver.Stdio(ctx, strings.NewReader(in), &out)); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err == nil && m.Result != nil {
			answered[string(m.ID)] = true
		}
	}
	for _, id := range []string{"1", "2", "3"} {
		if !answered[id] {
			t.Errorf("request %s has no answer; the server wrote:\n%s", id, out.String())
		}
	}
}
