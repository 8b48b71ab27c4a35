package agenttest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// resumeLabel labels the turn a session start opens in scan mode.
const resumeLabel = "(session start: workspace before the agent acts)"

// claudeBin finds the real Claude Code CLI: $CKPT_CLAUDE_BIN, else claude
// on $PATH.
func claudeBin(t *testing.T) string {
	t.Helper()
	return harness.AgentBin(t, "CKPT_CLAUDE_BIN", "claude", "@anthropic-ai/claude-code")
}

// transcriptEntry is one line of a Claude Code transcript (JSON lines).
type transcriptEntry struct {
	Type    string `json:"type"`
	UUID    string `json:"uuid"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func readTranscript(t *testing.T, path string) []transcriptEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []transcriptEntry
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e transcriptEntry
		if json.Unmarshal(line, &e) == nil && e.Type != "" {
			out = append(out, e)
		}
	}
	return out
}

// TestClaudeCodeRealBinary drives the real Claude Code CLI against a
// scripted model: three prompts create, edit (after a Read) and, by Bash in
// scan mode, delete files, through hooks `ckpt install claude` wrote; then
// every rewind scope and undo are checked byte for byte, and a rewind with
// --resume-claude forks Claude's own conversation at the rewound turn.
func TestClaudeCodeRealBinary(t *testing.T) {
	t.Parallel()
	claude := claudeBin(t)
	if _, err := exec.LookPath("ckpt"); err != nil {
		t.Skip("no ckpt on $PATH (TestMain puts this test binary there)")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, store := t.TempDir(), t.TempDir()

	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
	)
	srv, err := fakemodel.NewAnthropic(map[string][]fakemodel.Step{
		p1: {
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "alpha\nline two\n"}},
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "keep.txt"), "content": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt")}},
			{Tool: "Edit", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "old_string": "alpha", "new_string": "beta"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "Bash", Input: map[string]any{"command": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt", "description": "clean up"}},
			{Text: "Cleaned."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	e := &harness.Env{T: t, WS: ws, Store: store, Claude: claude, Environ: claudeEnv(home, store, srv.URL)}
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	}()
	ver, _, _ := e.Run(ws, nil, claude, "--version")
	t.Logf("claude --version: %s", strings.TrimSpace(ver))

	// Install the hooks and the status line; scan mode on for the session
	// before Claude starts it.
	e.Ckpt("install", "claude", "--statusline")
	settings, err := os.ReadFile(filepath.Join(ws, ".claude", "settings.json"))
	if err != nil || !bytes.Contains(settings, []byte(`"command": "ckpt hook claude"`)) {
		t.Fatalf("settings after install: %s (%v)", settings, err)
	}
	const sid = "5b0c9a4e-1d2f-4a3b-9c8d-7e6f5a4b3c2d"
	e.Ckpt("--session", sid, "scan", "on")

	e.Prompt("-p", p1, "--session-id", sid)
	e.WantFiles("after prompt 1", map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"})
	e.Prompt("-p", p2, "--continue")
	e.WantFiles("after prompt 2", map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"})
	e.Prompt("-p", p3, "--continue")
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// The turns: the resume checkpoint SessionStart took in scan mode, then
	// one per prompt, each with what it touched.
	var list []struct {
		Turn   int    `json:"turn"`
		Prompt string `json:"prompt"`
		Files  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"files"`
	}
	e.WantTurns(sid, resumeLabel+":", p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")

	// The status line Claude Code would show.
	line, _, err := e.Run(ws, nil, "sh", "-c", `printf '{"session_id":"`+sid+`","cwd":"`+ws+`"}' | ckpt statusline`)
	if err != nil || strings.TrimSpace(line) != "ckpt: 4 checkpoints · scan on · nothing to undo · /ckpt-rewind TURN" {
		t.Errorf("statusline = %q, %v", line, err)
	}

	// Code rewinds to each turn, and undo, byte for byte. No --force: the
	// files the agent's shell deleted in a scanned turn are the agent's
	// doing, not changes since it left them (issue 10, defect 8).
	for _, tc := range []struct {
		turn string
		want map[string]string
	}{
		{"3", map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}},
		{"2", map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}},
		{"1", map[string]string{}},
		{"0", map[string]string{}},
	} {
		e.Ckpt("--session", sid, "rewind", tc.turn, "--scope", "code")
		e.WantFiles("rewind "+tc.turn+" --scope code", tc.want)
		e.Ckpt("--session", sid, "undo")
		e.WantFiles("undo of rewind "+tc.turn, after)
	}

	// Where turn 2 began in Claude's transcript: its last assistant entry
	// before prompt 2.
	transcripts, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", sid+".jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("transcripts of %s: %v", sid, transcripts)
	}
	orig, err := os.ReadFile(transcripts[0])
	if err != nil {
		t.Fatal(err)
	}
	wantAt := ""
	for _, en := range readTranscript(t, transcripts[0]) {
		if en.Type == "user" && bytes.Contains(en.Message.Content, []byte(p2)) {
			break
		}
		if en.Type == "assistant" {
			wantAt = en.UUID
		}
	}
	if wantAt == "" {
		t.Fatal("no assistant entry before prompt 2 in the transcript")
	}

	// A conversation rewind prints Claude's fork command; undo brings the
	// turns back; the files are not touched.
	var rj struct {
		Prompt       string `json:"prompt"`
		ClaudeResume *struct {
			Session  string   `json:"session"`
			ResumeAt string   `json:"resume_at"`
			Argv     []string `json:"argv"`
			Exact    bool     `json:"exact"`
		} `json:"claude_resume"`
	}
	if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "rewind", "2", "--scope", "conversation", "--json")), &rj); err != nil {
		t.Fatal(err)
	}
	if rj.ClaudeResume == nil || rj.ClaudeResume.ResumeAt != wantAt || !rj.ClaudeResume.Exact || rj.Prompt != p2 {
		t.Fatalf("rewind --json: prompt %q, claude_resume %+v; want resume_at %s", rj.Prompt, rj.ClaudeResume, wantAt)
	}
	wantArgv := []string{"claude", "--resume", sid, "--fork-session", "--session-id", rj.ClaudeResume.Session, "--resume-session-at", wantAt, "-p", p2}
	if strings.Join(rj.ClaudeResume.Argv, "\x00") != strings.Join(wantArgv, "\x00") {
		t.Errorf("claude_resume.argv = %q, want %q", rj.ClaudeResume.Argv, wantArgv)
	}
	e.WantFiles("rewind 2 --scope conversation", after)
	if log := e.Ckpt("--session", sid, "log"); strings.Contains(log, p2) || !strings.Contains(log, p1) {
		t.Errorf("log after the conversation rewind:\n%s", log)
	}
	e.Ckpt("--session", sid, "undo")
	if log := e.Ckpt("--session", sid, "log"); !strings.Contains(log, p3) {
		t.Errorf("log after undo lacks prompt 3:\n%s", log)
	}

	// Both scopes with --resume-claude: the files go back to turn 2's
	// start, and the real Claude resumes a fork of its conversation there,
	// resending prompt 2; the fork's hooks record turn 2 again in this
	// session. The original transcript is left byte for byte.
	out, errOut, err := e.Run(ws, []string{"CKPT_CLAUDE_BIN=" + claude}, "ckpt", "--session", sid, "rewind", "2", "--scope", "both", "--force", "--resume-claude", "--", "--permission-mode", "acceptEdits")
	if err != nil {
		t.Fatalf("rewind --resume-claude: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if !strings.Contains(errOut, "claude --permission-mode acceptEdits --resume "+sid+" --fork-session --session-id ") ||
		!strings.Contains(errOut, "--resume-session-at "+wantAt+" -p '"+p2+"'") {
		t.Errorf("rewind --resume-claude stderr lacks the command:\n%s", errOut)
	}
	e.WantFiles("rewind 2 --scope both --resume-claude", map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"})
	if now, err := os.ReadFile(transcripts[0]); err != nil || !bytes.Equal(now, orig) {
		t.Errorf("the original transcript changed (%v)", err)
	}
	forks, _ := filepath.Glob(filepath.Join(filepath.Dir(transcripts[0]), "*.jsonl"))
	var fork string
	for _, f := range forks {
		if f != transcripts[0] {
			fork = f
		}
	}
	if fork == "" {
		t.Fatalf("no fork transcript next to %s", transcripts[0])
	}
	if t.Failed() {
		b, _ := os.ReadFile(fork)
		t.Logf("fork transcript:\n%s", b)
	}
	var prompts []string
	for _, en := range readTranscript(t, fork) {
		var s string
		if en.Type == "user" && json.Unmarshal(en.Message.Content, &s) == nil {
			prompts = append(prompts, s)
		}
	}
	if strings.Join(prompts, "|") != p1+"|"+p2 {
		t.Errorf("fork transcript prompts = %q, want [%q %q]", prompts, p1, p2)
	}
	if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[2].Prompt != p2 || len(list[2].Files) != 1 || list[2].Files[0].Path != "notes.txt" {
		t.Errorf("after the fork, ckpt list = %+v; want turns 0-2, turn 2 %q capturing notes.txt", list, p2)
	}

	// A fork made in Claude Code itself (not by ckpt) at the same place:
	// its first prompt finds, by the transcript entry it continues from,
	// the ckpt turn that followed it, and the new Claude session becomes a
	// ckpt fork holding the turns before. (The file gets back the text the
	// scripted Edit expects: Claude checks an edit before its hook runs.)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("alpha\nline two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Prompt("-p", p2, "--resume", sid, "--fork-session", "--resume-session-at", wantAt)
	known := map[string]bool{transcripts[0]: true, fork: true}
	forks, _ = filepath.Glob(filepath.Join(filepath.Dir(transcripts[0]), "*.jsonl"))
	handFork := ""
	for _, f := range forks {
		if !known[f] {
			handFork = strings.TrimSuffix(filepath.Base(f), ".jsonl")
		}
	}
	if handFork == "" {
		t.Fatal("no transcript for the fork made in Claude Code")
	}
	if err := json.Unmarshal([]byte(e.Ckpt("--session", handFork, "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cp := range list {
		got = append(got, cp.Prompt)
	}
	if want := []string{resumeLabel, p1, p2}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ckpt session of Claude's own fork: turns %q, want %q", got, want)
	} else if len(list[2].Files) != 1 || list[2].Files[0].Path != "notes.txt" {
		t.Errorf("Claude's own fork: turn 2 files %+v, want notes.txt", list[2].Files)
	}
}

// claudeEnv is the environment the real Claude Code runs in: this
// process's, without ckpt's, Anthropic's or Claude's own settings, with its
// own HOME and config under home, the scripted model server at url, and
// ckpt's store.
func claudeEnv(home, store, url string) []string {
	return harness.IsolatedEnv([]string{"ANTHROPIC_", "CLAUDE"},
		"HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-test", "CKPT_HOME="+store,
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1")
}
