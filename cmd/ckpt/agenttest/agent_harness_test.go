package agenttest_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helpers the real-agent tests share (agentEnv itself is in
// agent_claude_test.go).

// agentBin finds a real agent CLI: $envVar, else name on $PATH; it skips
// the test, saying how to get one, when there is none.
func agentBin(t *testing.T, envVar, name, pkg string) string {
	t.Helper()
	if b := os.Getenv(envVar); b != "" {
		return b
	}
	if b, err := exec.LookPath(name); err == nil {
		return b
	}
	t.Skipf("no %s CLI: set $%s or put %s on $PATH (npm install %s); .ci/run does", name, envVar, name, pkg)
	return ""
}

// agentTestDirs makes the workspace (symlinks resolved, as agents report
// it), a home and a store for a real-agent test, and checks that TestMain
// put ckpt on $PATH.
func agentTestDirs(t *testing.T) (ws, home, store string) {
	t.Helper()
	if _, err := exec.LookPath("ckpt"); err != nil {
		t.Skip("no ckpt on $PATH (TestMain builds it and puts it there)")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws, t.TempDir(), t.TempDir()
}

// isolatedEnv is the test process's environment without the variables
// whose names start with one of drop (and without CKPT_*, HOME and XDG_*),
// plus set.
func isolatedEnv(drop []string, set ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range append([]string{"CKPT_", "XDG_"}, drop...) {
			if strings.HasPrefix(k, p) {
				continue next
			}
		}
		if k != "HOME" {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// ckptTurns is `ckpt list --json` as one line per turn: the prompt, then
// each file with its kind.
func (e *agentEnv) ckptTurns(sid string) []string {
	e.t.Helper()
	var list []struct {
		Prompt string `json:"prompt"`
		Files  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(e.ckpt("--session", sid, "list", "--json")), &list); err != nil {
		e.t.Fatal(err)
	}
	var got []string
	for _, cp := range list {
		s := cp.Prompt + ":"
		for _, f := range cp.Files {
			s += " " + f.Path + "=" + f.Kind
		}
		got = append(got, s)
	}
	return got
}

// wantTurns checks `ckpt list` of sid, one line per turn (ckptTurns).
func (e *agentEnv) wantTurns(sid string, want ...string) {
	e.t.Helper()
	if got := e.ckptTurns(sid); strings.Join(got, "\n") != strings.Join(want, "\n") {
		e.t.Fatalf("ckpt list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkRewinds rewinds sid's code to each turn in code (turn number → the
// tree expected there) and undoes each, then rewinds the conversation and
// both to turn convTurn, whose prompt is convPrompt, and undoes those:
// every tree byte for byte, after is the tree the agent left.
func (e *agentEnv) checkRewinds(sid string, code []rewindWant, convTurn, convPrompt string, after map[string]string) {
	e.t.Helper()
	for _, tc := range code {
		e.ckpt("--session", sid, "rewind", tc.turn, "--scope", "code")
		e.wantFiles("rewind "+tc.turn+" --scope code", tc.want)
		e.ckpt("--session", sid, "undo")
		e.wantFiles("undo of rewind "+tc.turn+" --scope code", after)
	}
	var atConv map[string]string
	for _, tc := range code {
		if tc.turn == convTurn {
			atConv = tc.want
		}
	}
	logBefore := e.ckpt("--session", sid, "log")

	// Conversation: the log is cut before the turn, its prompt handed back,
	// and the files stay.
	var rj struct {
		Prompt string `json:"prompt"`
		Scope  string `json:"scope"`
	}
	if err := json.Unmarshal([]byte(e.ckpt("--session", sid, "rewind", convTurn, "--scope", "conversation", "--json")), &rj); err != nil {
		e.t.Fatal(err)
	}
	if rj.Prompt != convPrompt || rj.Scope != "conversation" {
		e.t.Errorf("rewind %s --scope conversation: prompt %q scope %q, want %q", convTurn, rj.Prompt, rj.Scope, convPrompt)
	}
	e.wantFiles("rewind "+convTurn+" --scope conversation", after)
	if log := e.ckpt("--session", sid, "log"); strings.Contains(log, convPrompt) {
		e.t.Errorf("log after rewind %s --scope conversation still has %q:\n%s", convTurn, convPrompt, log)
	}
	e.ckpt("--session", sid, "undo")
	if log := e.ckpt("--session", sid, "log"); log != logBefore {
		e.t.Errorf("log after undo:\n%s\nwant:\n%s", log, logBefore)
	}

	// Both: files and conversation together, and undo of both.
	if err := json.Unmarshal([]byte(e.ckpt("--session", sid, "rewind", convTurn, "--scope", "both", "--json")), &rj); err != nil {
		e.t.Fatal(err)
	}
	if rj.Prompt != convPrompt {
		e.t.Errorf("rewind %s --scope both: prompt %q, want %q", convTurn, rj.Prompt, convPrompt)
	}
	e.wantFiles("rewind "+convTurn+" --scope both", atConv)
	if log := e.ckpt("--session", sid, "log"); strings.Contains(log, convPrompt) {
		e.t.Errorf("log after rewind %s --scope both still has %q:\n%s", convTurn, convPrompt, log)
	}
	e.ckpt("--session", sid, "undo")
	e.wantFiles("undo of rewind "+convTurn+" --scope both", after)
	if log := e.ckpt("--session", sid, "log"); log != logBefore {
		e.t.Errorf("log after undo of both:\n%s\nwant:\n%s", log, logBefore)
	}
}

type rewindWant struct {
	turn string
	want map[string]string
}
