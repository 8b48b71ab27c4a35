package acpproxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/acpproxy"
	"github.com/ckpt/ckpt/internal/acptest"
)

// proxied starts the test agent behind a proxy recording into store, and
// returns the client end. The proxy and agent stop when the test ends.
func proxied(t *testing.T, store string, noScan bool) *acptest.Client {
	t.Helper()
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), "ACPPROXY_TEST_AGENT=1")
	agent.Stderr = os.Stderr
	toAgent, err := agent.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	fromAgent, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	st := controller.OpenStore(store)
	t.Cleanup(func() { st.Close() })
	p := acpproxy.New(acpproxy.Options{Store: st, NoScan: noScan})
	done := make(chan error, 1)
	go func() {
		err := p.Serve(context.Background(), inR, outW, fromAgent, toAgent)
		outW.Close()
		done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		if t.Failed() {
			outR.Close() // the client stopped reading: the proxy must not wait for it
			<-done
			agent.Wait()
			return
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := agent.Wait(); err != nil {
			t.Errorf("test agent: %v", err)
		}
	})
	return acptest.New(t, inW, outR)
}

func wantFiles(t *testing.T, ws, when string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	entries, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(ws, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: files %q, want %q", when, got, want)
	}
}

const endTurn = `"result":{"stopReason":"end_turn"}`

// start initializes and opens a session in a fresh workspace holding
// keep.txt; it returns the client, the workspace and the store.
func start(t *testing.T, noScan bool) (*acptest.Client, string, string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("original\r\nno newline at the end"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := proxied(t, store, noScan)
	c.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}}`)
	if got := c.Line(); got != initializeResult {
		t.Fatalf("initialize answer:\n%s\nwant the agent's bytes:\n%s", got, initializeResult)
	}
	c.Next = 0
	resp, _ := c.Request("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	if resp != `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess/1"}}` {
		t.Fatalf("session/new answer: %s", resp)
	}
	return c, ws, store
}

// TestProxyRewindsAndUndoesThroughCommands: prompts through the proxy
// open turns, the client's writes are captured before it makes them (a
// step per tool call), and /rewind, /undo, /redo and /checkpoints are
// answered by the proxy, byte for byte, without reaching the agent.
func TestProxyRewindsAndUndoesThroughCommands(t *testing.T) {
	c, ws, store := start(t, false)
	const sid = "sess/1"
	orig := "original\r\nno newline at the end"

	resp, said := c.Prompt(sid, "write keep.txt=changed\n;write new.txt=one")
	if !strings.Contains(resp, endTurn) || said != "done: write keep.txt=changed\n;write new.txt=one" {
		t.Fatalf("prompt 1: %s, said %q", resp, said)
	}
	// Two writes of one file in one turn: a step each.
	c.Prompt(sid, "write new.txt=two;write new.txt=three")
	after := map[string]string{"keep.txt": "changed\n", "new.txt": "three"}
	wantFiles(t, ws, "after the prompts", after)

	_, said = c.Prompt(sid, "/checkpoints")
	for _, w := range []string{"turn 0", "turn 1", "modified keep.txt", "created new.txt", "step 1.2 Write new.txt: new.txt", "write new.txt=two"} {
		if !strings.Contains(said, w) {
			t.Errorf("/checkpoints says:\n%s\nwithout %q", said, w)
		}
	}

	// Just before turn 1's second tool call: new.txt as the first left it.
	resp, said = c.Prompt(sid, "/rewind 1.2")
	if !strings.Contains(resp, endTurn) || strings.Contains(said, "done:") {
		t.Fatalf("/rewind reached the agent or did not end the turn: %s %q", resp, said)
	}
	wantFiles(t, ws, "/rewind 1.2 ("+said+")", map[string]string{"keep.txt": "changed\n", "new.txt": "two"})
	c.Prompt(sid, "/undo")
	wantFiles(t, ws, "/undo", after)

	_, said = c.Prompt(sid, "/rewind 0")
	wantFiles(t, ws, "/rewind 0 ("+said+")", map[string]string{"keep.txt": orig})
	if !strings.Contains(said, "1 restored, 1 deleted") {
		t.Errorf("/rewind 0 says %q", said)
	}
	_, said = c.Prompt(sid, "/undo")
	wantFiles(t, ws, "/undo of /rewind 0 ("+said+")", after)
	c.Prompt(sid, "/redo")
	wantFiles(t, ws, "/redo", map[string]string{"keep.txt": orig})
	c.Prompt(sid, "/undo")
	wantFiles(t, ws, "second /undo", after)

	// The conversation is the agent's: said so, nothing changed.
	_, said = c.Prompt(sid, "/rewind 0 both")
	if !strings.Contains(said, "Nothing was changed") {
		t.Errorf("/rewind 0 both says %q", said)
	}
	wantFiles(t, ws, "/rewind 0 both", after)
	_, said = c.Prompt(sid, "/rewind")
	if !strings.Contains(said, "Usage: /rewind TURN[.STEP]") {
		t.Errorf("/rewind alone says %q", said)
	}

	// The ckpt session is named after the ACP one, its workspace the cwd.
	ctl, err := controller.Open(context.Background(), controller.Options{Workspace: ws, Session: acpproxy.SessionID(sid), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	cps, _, err := ctl.Checkpoints(context.Background(), controller.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 2 || cps[0].Prompt != "write keep.txt=changed\n;write new.txt=one" {
		t.Fatalf("checkpoints: %+v", cps)
	}
	conv, err := ctl.Conversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(conv) != 4 || conv[1].Role != "assistant" || conv[1].Text != "done: write keep.txt=changed\n;write new.txt=one" {
		t.Errorf("conversation: %+v", conv)
	}
}

// TestProxyForwardsUnchanged: what the proxy does not act on passes both
// ways as the bytes it came in, the agent's errors and cancellations
// included; the agent's commands keep theirs beside ckpt's.
func TestProxyForwardsUnchanged(t *testing.T) {
	c, _, _ := start(t, false)
	// Session/new was followed by ckpt's commands, then the agent's own
	// with ckpt's added in place of its /undo.
	_, updates := c.Request("x/echo", nil)
	var names [][]string
	for _, u := range updates {
		var m struct {
			Params struct {
				Update struct {
					Kind string `json:"sessionUpdate"`
					Cmds []struct {
						Name        string `json:"name"`
						Description string `json:"description"`
					} `json:"availableCommands"`
				} `json:"update"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(u), &m)
		var n []string
		for _, x := range m.Params.Update.Cmds {
			n = append(n, x.Name+"="+strings.SplitN(x.Description, ":", 2)[0])
		}
		names = append(names, n)
	}
	want := "[[checkpoints=ckpt rewind=ckpt undo=ckpt redo=ckpt] [web=search the web checkpoints=ckpt rewind=ckpt undo=ckpt redo=ckpt]]"
	if fmt.Sprint(names) != want {
		t.Errorf("available commands: %v\nwant %s", names, want)
	}

	// A request the proxy does not know reaches the agent as sent.
	odd := `{"method":"x/echo" ,"id":"odd-1","jsonrpc":"2.0","params":{"s":"\u00e9\n","n":1.50}}`
	c.Send(odd)
	resp, _ := c.Until(`"odd-1"`)
	var echo struct {
		Result struct {
			Raw string `json:"raw"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &echo); err != nil || echo.Result.Raw != odd+"\n" {
		t.Errorf("the agent got %q, want %q (%v)", echo.Result.Raw, odd+"\n", err)
	}

	// The agent's own error comes back as it sent it.
	resp, _ = c.Prompt("sess/1", "fail")
	if want := fmt.Sprintf(agentError, fmt.Sprint(c.Next)); resp != want {
		t.Errorf("error answer:\n%s\nwant:\n%s", resp, want)
	}

	// A cancellation reaches the agent as sent, and its answer comes back.
	c.Next++
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"sess/1","prompt":[{"type":"text","text":"wait"}]}}`, c.Next))
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess/1"}}`
	c.Send(cancel)
	resp, updates = c.Until(fmt.Sprint(c.Next))
	if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"cancelled"}}`, c.Next); resp != want {
		t.Errorf("cancelled prompt's answer %s, want %s", resp, want)
	}
	if len(updates) != 1 || !strings.Contains(updates[0], `"text":`+strconvQuote(cancel)) {
		t.Errorf("the agent saw the cancellation as %v, want %s", updates, cancel)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestProxyScanCoversTerminalsAndSelfWrites: each prompt's turn is
// scanned, so what a client terminal and the agent itself change is
// rewound too; with NoScan only the client's writes are.
func TestProxyScanCoversTerminalsAndSelfWrites(t *testing.T) {
	for _, noScan := range []bool{false, true} {
		t.Run(fmt.Sprintf("noScan=%v", noScan), func(t *testing.T) {
			c, ws, _ := start(t, noScan)
			const sid = "sess/1"
			c.Prompt(sid, "shell rm keep.txt && printf 'by shell\\n' > sh.txt")
			c.Prompt(sid, "self own.txt=mine;write w.txt=client")
			after := map[string]string{"sh.txt": "by shell\n", "own.txt": "mine", "w.txt": "client"}
			wantFiles(t, ws, "after the prompts", after)
			_, said := c.Prompt(sid, "/rewind 1")
			if noScan {
				wantFiles(t, ws, "/rewind 1 without scan ("+said+")", map[string]string{"sh.txt": "by shell\n", "own.txt": "mine"})
				return
			}
			wantFiles(t, ws, "/rewind 1 ("+said+")", map[string]string{"sh.txt": "by shell\n"})
			c.Prompt(sid, "/undo")
			wantFiles(t, ws, "/undo of /rewind 1", after)
			_, said = c.Prompt(sid, "/rewind 0")
			wantFiles(t, ws, "/rewind 0 ("+said+")", map[string]string{"keep.txt": "original\r\nno newline at the end"})
			c.Prompt(sid, "/undo")
			wantFiles(t, ws, "/undo of /rewind 0", after)
		})
	}
}

// TestProxyRefusesAWriteItCannotCapture: a write ckpt cannot capture
// first (here a directory in the way) never reaches the editor; the agent
// gets an error saying why.
func TestProxyRefusesAWriteItCannotCapture(t *testing.T) {
	c, ws, _ := start(t, true)
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The test client fails the test on a write it cannot make: the
	// directory would be one.
	_, said := c.Prompt("sess/1", "write dir=text")
	if !strings.Contains(said, "write refused: fs/write_text_file: ") || !strings.Contains(said, "ckpt could not save the file before it is written") {
		t.Fatalf("the agent was told %q", said)
	}
	if fi, err := os.Stat(filepath.Join(ws, "dir")); err != nil || !fi.IsDir() {
		t.Fatalf("dir: %v %v", fi, err)
	}
}
