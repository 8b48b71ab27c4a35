package agenttest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
	"github.com/ckpt/ckpt/internal/quote"
)

// piRPC is the real pi (`pi --mode rpc`) in a test: JSON records on its
// stdin and stdout, extension dialogs answered by the test.
type piRPC struct {
	t      *testing.T
	e      *harness.Env
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	recs   chan map[string]any
	kill   func()
	cancel context.CancelFunc
	mu     sync.Mutex
	notes  []string // what the extension notified, in order
	editor string   // the editor text the extension set last
	status string   // the extension's footer status (key "ckpt")
	stderr strings.Builder
	n      int
}

// piCommand is how to start pi: $CKPT_PI_BIN (its cli.js or a pi
// launcher), under $CKPT_PI_NODE when set (pi needs Node 22.19 or later).
func piCommand(t *testing.T) []string {
	t.Helper()
	bin := harness.AgentBin(t, "CKPT_PI_BIN", "pi", "@earendil-works/pi-coding-agent")
	if node := os.Getenv("CKPT_PI_NODE"); node != "" {
		return []string{node, bin}
	}
	return []string{bin}
}

// newPiEnv sets up pi in home to use srv, the scripted Chat Completions
// server, as provider "scripted" (its models.json), offline, with its
// configuration in home/.pi/agent.
func newPiEnv(t *testing.T, ws, home, store string, srv *fakemodel.Server) *harness.Env {
	t.Helper()
	agentDir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	models, _ := json.Marshal(map[string]any{"providers": map[string]any{"scripted": map[string]any{
		"baseUrl": srv.URL + "/v1", "api": "openai-completions", "apiKey": "sk-test",
		"models": []any{map[string]any{"id": "gpt-4.1", "name": "scripted"}},
	}}})
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), models, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	})
	env := harness.IsolatedEnv([]string{"PI_", "OPENAI_"},
		"HOME="+home, "PI_CODING_AGENT_DIR="+agentDir, "CKPT_HOME="+store,
		"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0")
	return &harness.Env{T: t, WS: ws, Store: store, Environ: env}
}

// startPi starts pi in RPC mode in the workspace, trusting its project
// files for this run (--approve), with args after.
func startPi(t *testing.T, e *harness.Env, args ...string) *piRPC {
	t.Helper()
	argv := append(piCommand(t), append([]string{"--mode", "rpc", "--offline", "--approve", "--provider", "scripted", "--model", "gpt-4.1"}, args...)...)
	ctx, cancel := harness.SessionContext(t)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = e.WS
	cmd.Env = append(append([]string(nil), e.Environ...), "PWD="+e.WS)
	p := &piRPC{t: t, e: e, cmd: cmd, recs: make(chan map[string]any, 1000), cancel: cancel}
	cmd.Stderr = &lockedWriter{mu: &p.mu, b: &p.stderr}
	p.kill = harness.OwnProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				var m map[string]any
				if json.Unmarshal(line, &m) == nil {
					p.recs <- m
				}
			}
			if err != nil {
				close(p.recs)
				return
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// stop closes pi's stdin (an orderly shutdown) and waits for it.
func (p *piRPC) stop() {
	if p.cmd == nil {
		return
	}
	p.stdin.Close()
	done := make(chan struct{})
	go func() {
		for range p.recs {
		}
		p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
	}
	p.kill()
	p.cancel()
	p.cmd = nil
	if p.t.Failed() {
		p.mu.Lock()
		p.t.Logf("pi stderr:\n%s", p.stderr.String())
		p.mu.Unlock()
	}
}

func (p *piRPC) send(m map[string]any) string {
	p.t.Helper()
	p.n++
	id := fmt.Sprintf("req-%d", p.n)
	if _, ok := m["id"]; !ok {
		m["id"] = id
	}
	b, _ := json.Marshal(m)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("write to pi: %v", err)
	}
	return fmt.Sprint(m["id"])
}

// dialog answers one extension dialog: given its request, the response
// fields (value, confirmed or cancelled).
type dialog func(req map[string]any) map[string]any

// pick answers a select whose title holds title with the option that
// starts with option.
func pick(title, option string) dialog {
	return func(req map[string]any) map[string]any {
		return map[string]any{"want": "select", "title": title, "prefix": option}
	}
}

// confirm answers a question whose title holds title: the extension asks
// with a select of No (first, the default) and Yes.
func confirm(title string, yes bool) dialog {
	answer := "No"
	if yes {
		answer = "Yes"
	}
	return func(req map[string]any) map[string]any {
		if opts, _ := req["options"].([]any); len(opts) == 0 || opts[0] != "No" {
			return map[string]any{"want": "a No/Yes question", "title": title}
		}
		return pick(title, answer)(req)
	}
}

// next reads the next record, failing the test after a minute.
func (p *piRPC) next(what string) map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.recs:
		if !ok {
			p.t.Fatalf("pi exited while waiting for %s", what)
		}
		return m
	case <-time.After(3 * time.Minute):
		p.t.Fatalf("timed out waiting for %s", what)
	}
	return nil
}

// until reads records, answering dialogs in order from answers, until
// done says so; it fails on a dialog no answer was given for, and on one
// that does not match its answer.
func (p *piRPC) until(what string, done func(map[string]any) bool, answers ...dialog) {
	p.t.Helper()
	for {
		m := p.next(what)
		if m["type"] == "extension_ui_request" {
			switch m["method"] {
			case "notify":
				p.notes = append(p.notes, fmt.Sprint(m["message"]))
				continue
			case "set_editor_text":
				p.editor = fmt.Sprint(m["text"])
				continue
			case "setStatus":
				if m["statusKey"] == "ckpt" {
					p.status = fmt.Sprint(m["statusText"])
				}
				continue
			case "select", "confirm", "input", "editor":
			default:
				continue
			}
			if len(answers) == 0 {
				p.t.Fatalf("%s: unexpected dialog %v", what, m)
			}
			want := answers[0](m)
			answers = answers[1:]
			title := fmt.Sprint(m["title"])
			if m["method"] != want["want"] || !strings.Contains(title, fmt.Sprint(want["title"])) {
				p.t.Fatalf("%s: dialog %s %q, want %s %q (%v)", what, m["method"], title, want["want"], want["title"], m)
			}
			resp := map[string]any{"type": "extension_ui_response", "id": m["id"]}
			if m["method"] == "confirm" {
				resp["confirmed"] = want["confirmed"]
			} else {
				var opts []string
				for _, o := range m["options"].([]any) {
					opts = append(opts, fmt.Sprint(o))
				}
				found := ""
				for _, o := range opts {
					if strings.HasPrefix(o, fmt.Sprint(want["prefix"])) {
						found = o
						break
					}
				}
				if found == "" {
					p.t.Fatalf("%s: select %q has no option %q: %q", what, title, want["prefix"], opts)
				}
				resp["value"] = found
			}
			p.send(resp)
			continue
		}
		if done(m) {
			if len(answers) > 0 {
				p.t.Fatalf("%s: %d dialog(s) never came", what, len(answers))
			}
			return
		}
	}
}

// prompt sends a user prompt and waits for pi to settle.
func (p *piRPC) prompt(text string) {
	p.t.Helper()
	p.send(map[string]any{"type": "prompt", "message": text})
	p.until("prompt "+text, func(m map[string]any) bool { return m["type"] == "agent_settled" })
}

// command runs an extension command (/rewind), answering its dialogs.
func (p *piRPC) command(text string, answers ...dialog) {
	p.t.Helper()
	id := p.send(map[string]any{"type": "prompt", "message": text})
	p.until(text, func(m map[string]any) bool {
		if m["type"] == "response" && m["id"] == id {
			if m["success"] != true {
				p.t.Fatalf("%s: %v", text, m)
			}
			return true
		}
		return false
	}, answers...)
}

// call sends an RPC command and returns its response's data.
func (p *piRPC) call(m map[string]any, answers ...dialog) map[string]any {
	p.t.Helper()
	id := p.send(m)
	var data map[string]any
	p.until(fmt.Sprint(m["type"]), func(r map[string]any) bool {
		if r["type"] == "response" && r["id"] == id {
			if r["success"] != true {
				p.t.Fatalf("%s: %v", m["type"], r)
			}
			data, _ = r["data"].(map[string]any)
			return true
		}
		return false
	}, answers...)
	return data
}

// userMessages is the text of each user message in pi's active
// conversation (RPC get_messages).
func (p *piRPC) userMessages() []string {
	p.t.Helper()
	data := p.call(map[string]any{"type": "get_messages"})
	var out []string
	msgs, _ := data["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] != "user" {
			continue
		}
		switch c := mm["content"].(type) {
		case string:
			out = append(out, c)
		case []any:
			for _, part := range c {
				if pm, _ := part.(map[string]any); pm["type"] == "text" {
					out = append(out, fmt.Sprint(pm["text"]))
				}
			}
		}
	}
	return out
}

// TestPiRealBinary drives the real pi in RPC mode against a scripted
// Chat Completions server, with the extension `ckpt install pi` wrote:
// three prompts create files with write, edit one with edit and delete
// them with bash (scan mode, on since install); then /rewind, answered
// over RPC, puts files and conversation back to before the first prompt
// byte for byte, and its undo brings everything back. Then every scope,
// a forced undo, redo, and pi's /fork; the workspace is a git repository
// whose .git ckpt never touches.
func TestPiRealBinary(t *testing.T) {
	t.Parallel()
	piCommand(t)
	ws, home, store := harness.TestDirs(t)
	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
		p4 = "just talk"
	)
	notes := filepath.Join(ws, "notes.txt")
	srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{
		p1: {
			{Tool: "write", Input: map[string]any{"path": notes, "content": "alpha\nline two\n"}},
			{Tool: "write", Input: map[string]any{"path": "keep.txt", "content": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "read", Input: map[string]any{"path": notes}},
			{Tool: "edit", Input: map[string]any{"path": notes, "edits": []any{map[string]any{"oldText": "alpha", "newText": "beta"}}}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "bash", Input: map[string]any{"command": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt"}},
			{Text: "Cleaned."},
		},
		p4: {{Text: "Nothing to do."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newPiEnv(t, ws, home, store, srv)
	// A git repository: ckpt works inside one without touching .git.
	gitBefore := ""
	if _, err := exec.LookPath("git"); err == nil {
		if _, errOut, err := e.Run(ws, nil, "git", "init", "-q"); err != nil {
			t.Fatalf("git init: %v %s", err, errOut)
		}
		gitBefore = harness.DirListing(t, filepath.Join(ws, ".git"))
	}
	out := e.Ckpt("install", "pi")
	ext, err := os.ReadFile(filepath.Join(ws, ".pi", "extensions", "ckpt-rewind.ts"))
	if err != nil || !strings.Contains(string(ext), `const CKPT: string[] = ["ckpt"];`) {
		t.Fatalf("extension after install (%s): %.300s (%v)", out, ext, err)
	}

	pi := startPi(t, e)
	pi.prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	pi.prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	pi.prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// One ckpt session, pi's: one turn per prompt, each with what its
	// write and edit calls named.
	sid := e.OnlySession()
	e.WantTurns(sid, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")
	if pi.status != "◆ ckpt: 3 checkpoints" {
		t.Errorf("footer status %q, want the checkpoint count", pi.status)
	}

	// /rewind: the checkpoint of prompt 1, files and conversation.
	// Each checkpoint is labelled with its prompt and its tool calls.
	pi.command("/rewind",
		pick("Rewind to before which prompt", `#0 "`+p1+`" → write notes.txt, write keep.txt`),
		pick("Restore what?", "Files + conversation"),
		confirm("Rewind files + conversation", true))
	e.WantFiles("after /rewind to prompt 1", map[string]string{})
	if got := pi.userMessages(); len(got) != 0 {
		t.Errorf("pi's conversation after /rewind to prompt 1: %q, want none", got)
	}

	// Undo of the rewind: files and conversation as they were.
	pi.command("/rewind", pick("Rewind to before which prompt", "↩ Undo last rewind"), confirm("Undo the last rewind", true))
	e.WantFiles("after undo", after)
	if got := pi.userMessages(); strings.Join(got, "|") != p1+"|"+p2+"|"+p3 {
		t.Errorf("pi's conversation after undo: %q, want the three prompts", got)
	}

	// A fourth prompt; a files-only rewind to prompt 2 keeps the
	// conversation. A hand edit after it makes its undo show the file and
	// ask again; redo gives the hand edit back.
	pi.prompt(p4)
	pi.command("/rewind",
		pick("Rewind to before which prompt", `#1 "`+p2),
		pick("Restore what?", "Files only"),
		confirm("Rewind files only", true))
	e.WantFiles("after /rewind files only to prompt 2", afterP1)
	if got := pi.userMessages(); len(got) != 4 {
		t.Errorf("pi's conversation after a files-only rewind: %q, want the four prompts", got)
	}
	if err := os.WriteFile(notes, []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pi.command("/rewind", pick("Rewind to before which prompt", "↩ Undo last rewind"),
		confirm("Undo the last rewind", true), confirm("Files changed by hand", true))
	e.WantFiles("after the forced undo of the files-only rewind", after)
	pi.command("/rewind", pick("Rewind to before which prompt", "↪ Redo"), confirm("Redo the rewind", true))
	e.WantFiles("after redo", map[string]string{"notes.txt": "by hand\n", "keep.txt": "keep me\r\n"})
	pi.command("/rewind", pick("Rewind to before which prompt", "↩ Undo last rewind"), confirm("Undo the last rewind", true))
	e.WantFiles("after the undo of the redo", after)

	// Conversation only, to prompt 2: the files stay, pi's conversation is
	// cut before it and the prompt is back in the editor; undo and redo
	// move pi's conversation with ckpt's.
	pi.command("/rewind",
		pick("Rewind to before which prompt", `#1 "`+p2),
		pick("Restore what?", "Conversation only"),
		confirm("Rewind conversation only", true))
	e.WantFiles("after /rewind conversation only", after)
	if got := pi.userMessages(); strings.Join(got, "|") != p1 || pi.editor != p2 {
		t.Errorf("after /rewind conversation only: conversation %q, editor %q; want %q and %q", got, pi.editor, p1, p2)
	}
	if log := e.Ckpt("--session", sid, "log"); strings.Contains(log, p2) {
		t.Errorf("ckpt log after the conversation rewind still has %q:\n%s", p2, log)
	}
	pi.command("/rewind", pick("Rewind to before which prompt", "↩ Undo last rewind"), confirm("Undo the last rewind", true))
	if got := pi.userMessages(); len(got) != 4 {
		t.Errorf("pi's conversation after undo: %q, want the four prompts", got)
	}
	pi.editor = ""
	pi.command("/rewind", pick("Rewind to before which prompt", "↪ Redo"), confirm("Redo the rewind", true))
	if got := pi.userMessages(); strings.Join(got, "|") != p1 || pi.editor != p2 {
		t.Errorf("after redo: conversation %q, editor %q; want %q and %q", got, pi.editor, p1, p2)
	}
	pi.command("/rewind", pick("Rewind to before which prompt", "↩ Undo last rewind"), confirm("Undo the last rewind", true))
	if got := pi.userMessages(); len(got) != 4 {
		t.Errorf("pi's conversation after the second undo: %q, want the four prompts", got)
	}
	e.WantFiles("after the undo and redo of conversation rewinds", after)

	// pi's /fork at prompt 2, "Restore all": the fork is a ckpt fork of
	// this session at turn 1 (its turns before shared), its files put back
	// to the start of that turn.
	forks := pi.call(map[string]any{"type": "get_fork_messages"})
	entry := ""
	for _, m := range forks["messages"].([]any) {
		if mm := m.(map[string]any); mm["text"] == p2 {
			entry = fmt.Sprint(mm["entryId"])
		}
	}
	if entry == "" {
		t.Fatalf("get_fork_messages: no %q in %v", p2, forks)
	}
	// "Code only": the files go back to the start of turn 1, the fork is
	// called off and the conversation stays; /rewind's undo reverses it.
	data := pi.call(map[string]any{"type": "fork", "entryId": entry}, pick("ckpt: fork and files", "Code only"))
	if data["cancelled"] != true {
		t.Fatalf("fork with Code only: %v, want it called off", data)
	}
	e.WantFiles("after /fork with Code only", afterP1)
	if got := pi.userMessages(); len(got) != 4 {
		t.Errorf("pi's conversation after /fork with Code only: %q, want the four prompts", got)
	}
	pi.command("/rewind", pick("Rewind to before which prompt", "↩ Undo last rewind"), confirm("Undo the last rewind", true))
	e.WantFiles("after the undo of Code only", after)

	data = pi.call(map[string]any{"type": "fork", "entryId": entry}, pick("ckpt: fork and files", "Restore all"))
	if data["cancelled"] == true || data["text"] != p2 {
		t.Fatalf("fork: %v", data)
	}
	e.WantFiles("after /fork with Restore all", afterP1)
	state := pi.call(map[string]any{"type": "get_state"})
	child := fmt.Sprint(state["sessionId"])
	if child == sid || child == "" {
		t.Fatalf("fork: session %q, want a new one (state %v)", child, state)
	}
	e.WantTurns(child, p1+": keep.txt=created notes.txt=created")
	// The fork goes on from there; its undo gives back what the restore
	// overwrote, and the first session is as it was.
	pi.prompt(p2)
	e.WantFiles("after prompt 2 in the fork", afterP2)
	e.WantTurns(child, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified")
	// The shell's turn lists what its scans saw it change once the next
	// turn's scan is there (while it was open, only status showed it).
	e.WantTurns(sid, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified",
		p3+": keep.txt=deleted notes.txt=deleted shell.txt=created", p4+":")
	if gitBefore != "" {
		if got := harness.DirListing(t, filepath.Join(ws, ".git")); got != gitBefore {
			t.Errorf(".git changed:\n%s\nwant:\n%s", got, gitBefore)
		}
	}
}

// TestPiRealBinaryTree drives pi's terminal UI in tmux (pi has no RPC
// command for /tree): after two prompts, /tree to the second prompt with
// "Restore files to that point" puts the files back to before it, and
// /rewind's undo brings them back.
func TestPiRealBinaryTree(t *testing.T) {
	t.Parallel()
	argv := piCommand(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux")
	}
	ws, home, store := harness.TestDirs(t)
	srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{
		"one": {{Tool: "write", Input: map[string]any{"path": "a.txt", "content": "A1\n"}}, {Text: "did one"}},
		"two": {{Tool: "write", Input: map[string]any{"path": "a.txt", "content": "A2\n"}}, {Text: "did two"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newPiEnv(t, ws, home, store, srv)
	e.Ckpt("install", "pi")

	// pi in a tmux pane, with e's environment.
	pe := &tmuxPane{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = pe.tmux("kill-server").Run() })
	sh := "cd " + quote.Shell(ws) + " && exec env -i"
	for _, kv := range append(e.Environ, "TERM=xterm-256color") {
		sh += " " + quote.Shell(kv)
	}
	for _, a := range append(argv, "--approve", "--offline", "--provider", "scripted", "--model", "gpt-4.1") {
		sh += " " + quote.Shell(a)
	}
	if out, err := pe.tmux("new-session", "-d", "-s", "picker", "-x", "120", "-y", "40", sh+"; sleep 30").CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	// pi's start and each answer take seconds on a loaded machine: waits
	// of two minutes, not the picker's 15 s.
	waitScreen := func(what string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			sc := pe.screen()
			if ok(sc) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; screen:\n%s", what, sc)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor := func(want string) {
		t.Helper()
		waitScreen(fmt.Sprintf("%q", want), func(sc string) bool { return strings.Contains(sc, want) })
	}
	waitFor("◆ ckpt: 0 checkpoints")
	// Each prompt once pi is idle again (the footer counts the turn and
	// pi's "Working" loader is gone): a message sent while pi works joins
	// the running turn.
	idle := func(count string) {
		t.Helper()
		waitScreen("idle with "+count, func(s string) bool {
			return strings.Contains(s, "◆ ckpt: "+count) && !strings.Contains(s, "Working")
		})
	}
	pe.keys("one")
	pe.keys("Enter")
	idle("1 checkpoint")
	pe.keys("two")
	pe.keys("Enter")
	idle("2 checkpoints")
	waitFor("did two")
	e.WantFiles("after two prompts", map[string]string{"a.txt": "A2\n"})

	// /tree: up from the last answer to the second prompt, no summary,
	// then ckpt's question.
	pe.keys("/tree")
	pe.keys("Enter")
	waitFor("Session Tree")
	pe.keys("Up")
	pe.keys("Up")
	waitFor("› • user: two")
	pe.keys("Enter")
	waitFor("Summarize branch?")
	pe.keys("Enter")
	waitFor("ckpt: files at that point?")
	pe.keys("Down")
	pe.keys("Enter")
	waitFor("Navigated to selected point")
	e.WantFiles("after /tree to the second prompt, restoring files", map[string]string{"a.txt": "A1\n"})

	// The prompt is back in the editor: clear it, then /rewind's undo.
	pe.keys("C-c")
	pe.keys("/rewind")
	pe.keys("Enter")
	waitFor("→ ↩ Undo last rewind")
	pe.keys("Enter")
	waitFor("Undo the last rewind?")
	pe.keys("Down")
	pe.keys("Enter")
	waitFor("ckpt: undo done")
	e.WantFiles("after the undo", map[string]string{"a.txt": "A2\n"})
}

// tmuxPane is a tmux server of its own with one session, "picker": the
// few calls of cmd/ckpt's picker test helpers TestPiRealBinaryTree needs,
// which a test in another package cannot reach.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func (p *tmuxPane) tmux(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	return cmd
}

func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	if out, err := p.tmux(append([]string{"send-keys", "-t", "picker"}, keys...)...).CombinedOutput(); err != nil {
		p.t.Fatalf("tmux send-keys %v: %v\n%s", keys, err, out)
	}
}

func (p *tmuxPane) screen() string {
	out, _ := p.tmux("capture-pane", "-p", "-t", "picker").Output()
	return string(out)
}
