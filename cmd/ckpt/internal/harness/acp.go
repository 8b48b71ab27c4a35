package harness

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/acptest"
)

// StartACP starts `ckpt acp -- agent...` in e's workspace and environment
// (stopped when the test ends), initializes it as an editor offering file
// reads and writes, authenticates with method auth unless it is "", and
// opens a session in the workspace: the client and the session.
func StartACP(t *testing.T, e *Env, auth string, agent ...string) (*acptest.Client, string) {
	t.Helper()
	ctx, cancel := SessionContext(t)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, CkptBinary(t), append([]string{"acp", "--"}, agent...)...)
	cmd.Dir = e.WS
	cmd.Env = append(append([]string(nil), e.Environ...), "PWD="+e.WS)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	killGroup := OwnProcessGroup(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The client hangs up; an agent that does not exit on that
		// (codex-acp) is stopped.
		in.Close()
		stop := time.AfterFunc(10*time.Second, cancel)
		cmd.Wait()
		stop.Stop()
		killGroup()
		if t.Failed() {
			t.Logf("ckpt acp stderr:\n%s", stderr.String())
		}
	})
	c := acptest.New(t, in, out)
	resp, _ := c.Request("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": false}})
	var init struct {
		Result struct {
			ProtocolVersion int             `json:"protocolVersion"`
			AgentInfo       json.RawMessage `json:"agentInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &init); err != nil || init.Result.ProtocolVersion != 1 {
		t.Fatalf("initialize: %s", resp)
	}
	t.Logf("ACP agent: %s", init.Result.AgentInfo)
	if auth != "" {
		if resp, _ = c.Request("authenticate", map[string]any{"methodId": auth}); strings.Contains(resp, `"error"`) {
			t.Fatalf("authenticate %s: %s", auth, resp)
		}
	}
	resp, _ = c.Request("session/new", map[string]any{"cwd": e.WS, "mcpServers": []any{}})
	var sn struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &sn); err != nil || sn.Result.SessionID == "" {
		t.Fatalf("session/new: %s", resp)
	}
	return c, sn.Result.SessionID
}

// ACPPrompt sends prompt p and wants it to end its turn; it returns what
// the agent (or ckpt) said.
func ACPPrompt(t *testing.T, c *acptest.Client, sid, p string) string {
	t.Helper()
	resp, said := c.Prompt(sid, p)
	if !strings.Contains(resp, `"stopReason":"end_turn"`) {
		t.Fatalf("prompt %q: %s (said %q)", p, resp, said)
	}
	return said
}

// SessionContext is the context of an agent process that lives through a
// whole test (an ACP or RPC session, many prompts long): done a minute
// before the test binary's deadline, so a hung agent is killed and the
// test fails saying so, rather than the binary's timeout ending it with
// the agent left running. No shorter: a fixed cap on a session's life
// (it was 3 and 5 minutes) is a race with a loaded machine's pace.
func SessionContext(t *testing.T) (context.Context, context.CancelFunc) {
	if deadline, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), deadline.Add(-time.Minute))
	}
	return context.WithCancel(context.Background())
}
