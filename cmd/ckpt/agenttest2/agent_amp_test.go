package agenttest2_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
)

// ampDriver runs the plugin `ckpt install amp` wrote under node with a
// stand-in for Amp's plugin API: argv is the plugin, the event name, the
// event, and what Amp's helpers answer for it (the files the tool call
// modifies, whether it is a shell command). It prints the handler's
// result as JSON.
const ampDriver = `import { pathToFileURL, fileURLToPath } from "node:url";
const [plugin, name, event, files, shell] = process.argv.slice(2);
const handlers = {};
const amp = {
  system: { workspaceRoot: pathToFileURL(process.cwd()) },
  logger: { log: (s) => process.stderr.write(String(s)) },
  helpers: {
    filePathFromURI: (u) => fileURLToPath(String(u)),
    filesModifiedByToolCall: () => { const f = JSON.parse(files); return f.length ? f.map((p) => pathToFileURL(p)) : null; },
    shellCommandFromToolCall: () => (shell === "true" ? { command: "sh" } : null),
  },
  on: (e, h) => { handlers[e] = h; },
};
const mod = await import(pathToFileURL(plugin));
mod.default(amp);
const result = await handlers[name](JSON.parse(event), {});
process.stdout.write(JSON.stringify(result === undefined ? null : result));
`

// TestAmpPlugin runs the plugin `ckpt install amp` writes to
// .amp/plugins/ckpt.ts under node, with a stand-in for Amp's plugin API
// (Amp itself runs it under Bun; its model answers only from Amp's
// servers, so no Amp thread runs offline): three prompts whose tool calls
// create files, edit one and, by a shell command in scan mode, delete
// them, each change made after its tool.call handler returned "allow";
// then every rewind scope and undo are checked byte for byte with the
// real ckpt binary, and .git is left as it was.
func TestAmpPlugin(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on $PATH: the plugin's handlers need a JavaScript runtime")
	}
	ws, home, store := harness.TestDirs(t)
	e := &harness.Env{T: t, WS: ws, Store: store, Environ: harness.IsolatedEnv(nil, "HOME="+home, "CKPT_HOME="+store)}
	defer e.KeepGit()()
	e.Ckpt("install", "amp")
	plugin := filepath.Join(ws, ".amp", "plugins", "ckpt.ts")
	b, err := os.ReadFile(plugin)
	if err != nil || !strings.Contains(string(b), `const argv = ["ckpt","hook","amp"];`) {
		t.Fatalf("plugin after install: %s (%v)", b, err)
	}
	// node loads ES modules by extension: the same text as .mjs.
	dir := t.TempDir()
	mjs := filepath.Join(dir, "ckpt.mjs")
	driver := filepath.Join(dir, "drive.mjs")
	if err := os.WriteFile(mjs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(driver, []byte(ampDriver), 0o644); err != nil {
		t.Fatal(err)
	}
	const thread = "T-3e1f0a52-7c4d-4b8e-9a61-2f5d8c7b6a40"
	fire := func(name string, ev map[string]any, files []string, shell bool) string {
		t.Helper()
		ev["thread"] = map[string]any{"id": thread}
		evb, _ := json.Marshal(ev)
		fb, _ := json.Marshal(append([]string{}, files...))
		sh := "false"
		if shell {
			sh = "true"
		}
		out, errOut, err := e.Run(ws, nil, node, driver, mjs, name, string(evb), string(fb), sh)
		if err != nil || errOut != "" {
			t.Fatalf("%s handler: %v\nstdout: %s\nstderr: %s", name, err, out, errOut)
		}
		return out
	}
	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tool := func(name string, input map[string]any, files []string, shell bool) {
		t.Helper()
		if got := fire("tool.call", map[string]any{"toolUseID": "toolu_" + name, "tool": name, "input": input}, files, shell); got != `{"action":"allow"}` {
			t.Fatalf("tool.call %s answered %s, want allow", name, got)
		}
	}
	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
	)
	notes, keep := filepath.Join(ws, "notes.txt"), filepath.Join(ws, "keep.txt")
	e.Ckpt("--session", thread, "scan", "on")

	fire("agent.start", map[string]any{"message": p1, "id": 1}, nil, false)
	tool("create_file", map[string]any{"path": notes, "content": "alpha\nline two\n"}, []string{notes}, false)
	write("notes.txt", "alpha\nline two\n")
	tool("create_file", map[string]any{"path": keep, "content": "keep me\r\n"}, []string{keep}, false)
	write("keep.txt", "keep me\r\n")
	tool("Read", map[string]any{"path": notes}, nil, false)
	fire("agent.end", map[string]any{"message": p1, "id": 1, "status": "done", "messages": []any{}}, nil, false)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)

	fire("agent.start", map[string]any{"message": p2, "id": 3}, nil, false)
	tool("edit_file", map[string]any{"path": notes, "old_str": "alpha", "new_str": "beta"}, []string{notes}, false)
	write("notes.txt", "beta\nline two\n")
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}

	fire("agent.start", map[string]any{"message": p3, "id": 5}, nil, false)
	tool("Bash", map[string]any{"cmd": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt"}, nil, true)
	for _, p := range []string{notes, keep} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	write("shell.txt", "by shell\n")
	after := map[string]string{"shell.txt": "by shell\n"}

	e.WantTurns(thread, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")
	e.CheckRewinds(thread, []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	}, "1", p2, after)
}

// TestAmpRealBinary has the real Amp CLI load the plugin `ckpt install
// amp` wrote, in its own plugin runtime (Bun, with Amp's plugin API), by
// `amp plugins exec`, offline: the plugin loads and its default export
// runs against the real API. Amp answers no prompt without its servers,
// so its handlers are proven under node (TestAmpPlugin).
func TestAmpRealBinary(t *testing.T) {
	t.Parallel()
	amp := harness.AgentBin(t, "CKPT_AMP_BIN", "amp", "@ampcode/cli")
	ws, home, store := harness.TestDirs(t)
	e := &harness.Env{T: t, WS: ws, Store: store, Environ: harness.IsolatedEnv([]string{"AMP_"}, "HOME="+home, "CKPT_HOME="+store)}
	e.LogVersionIfFailed(amp)
	e.Ckpt("install", "amp")
	rel := filepath.Join(".amp", "plugins", "ckpt.ts")
	out, errOut, err := e.Run(ws, nil, amp, "plugins", "exec", rel, "session.start", "--data", `{"thread":{"id":"T-1"}}`)
	if err != nil || strings.Contains(out+errOut, "Failed to load plugin") {
		t.Fatalf("amp plugins exec %s: %v\nstdout: %s\nstderr: %s", rel, err, out, errOut)
	}
}
