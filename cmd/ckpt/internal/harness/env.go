package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Env runs the real agent and the real ckpt binary in isolated
// directories: its own HOME, config and store, the scripted model server,
// and the ckpt binary TestMain put first on $PATH.
type Env struct {
	T       *testing.T
	WS      string        // the workspace
	Store   string        // ckpt's store ($CKPT_HOME)
	Claude  string        // the Claude Code CLI Prompt runs
	Environ []string      // every process's environment
	Timeout time.Duration // for each process; 0 means 3 minutes
}

// Run runs one process with e's environment and no stdin, in a process
// group of its own (Unix) that is killed when it ends or times out, so an
// agent leaves nothing running behind it.
func (e *Env) Run(dir string, extraEnv []string, name string, args ...string) (stdout, stderr string, err error) {
	e.T.Helper()
	// The timeout only stops a hung process: generous, so that a loaded
	// machine (tests run in parallel) never fails a test on time.
	timeout := e.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// $PWD is dir, not the test's: agents (OpenCode) take it as their
	// working directory.
	cmd.Env = append(append(append([]string(nil), e.Environ...), "PWD="+dir), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	killGroup := OwnProcessGroup(cmd)
	err = cmd.Run()
	killGroup()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (timed out after %s)", err, timeout)
	}
	return out.String(), errb.String(), err
}

// LogVersionIfFailed logs `agent --version` when the test ends failed.
// .ci/run prints every agent's version once; a passing test spends no
// agent start (seconds of CPU for some) on it.
func (e *Env) LogVersionIfFailed(agent string) {
	e.T.Cleanup(func() {
		if e.T.Failed() {
			ver, _, _ := e.Run(e.WS, nil, agent, "--version")
			e.T.Logf("%s --version: %s", filepath.Base(agent), strings.TrimSpace(ver))
		}
	})
}

// Ckpt runs the ckpt binary in the workspace and fails the test on error.
func (e *Env) Ckpt(args ...string) string {
	e.T.Helper()
	out, errOut, err := e.Run(e.WS, nil, "ckpt", args...)
	if err != nil {
		e.T.Fatalf("ckpt %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// Prompt runs one non-interactive Claude Code prompt (e.Claude).
func (e *Env) Prompt(args ...string) {
	e.T.Helper()
	full := append([]string{"--permission-mode", "acceptEdits"}, args...)
	out, errOut, err := e.Run(e.WS, nil, e.Claude, full...)
	if err != nil {
		e.T.Fatalf("claude %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
}

// Install runs `ckpt install ARGS` in the workspace and returns its stderr.
func (e *Env) Install(args ...string) string {
	e.T.Helper()
	out, errOut, err := e.Run(e.WS, nil, "ckpt", append([]string{"install"}, args...)...)
	if err != nil {
		e.T.Fatalf("ckpt install %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return errOut
}

// Files reads the workspace's regular files, by slash path, outside the
// top-level dot directories agents keep their settings in (.claude,
// .codex, .gemini, ...).
func (e *Env) Files() map[string]string {
	e.T.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(e.WS, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.WS, p)
		if d.IsDir() && strings.HasPrefix(rel, ".") && rel != "." && !strings.ContainsRune(rel, filepath.Separator) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return got
}

// WantFiles checks that the workspace's files (Files) are want, saying
// when in each error.
func (e *Env) WantFiles(when string, want map[string]string) {
	e.T.Helper()
	got := e.Files()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			e.T.Errorf("%s: %s missing, want %q", when, p, w)
		} else if g != w {
			e.T.Errorf("%s: %s = %q, want %q", when, p, g, w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			e.T.Errorf("%s: unexpected %s = %q", when, p, g)
		}
	}
}

// OnlySession is the id of the store's one session; the test fails when
// there is not exactly one. For agents whose session id is known only
// once their first hook has run.
func (e *Env) OnlySession() string {
	e.T.Helper()
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(e.Ckpt("sessions", "--json")), &list); err != nil {
		e.T.Fatal(err)
	}
	if len(list) != 1 {
		e.T.Fatalf("ckpt sessions: %+v, want one session", list)
	}
	return list[0].ID
}

// WaitTurns waits until the store's one session has n turns, or for d.
// It may run outside the test's goroutine, so it reports nothing: the
// test's own checks fail if the turn never came.
func (e *Env) WaitTurns(n int, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		out, _, err := e.Run(e.WS, nil, "ckpt", "sessions", "--json")
		var list []struct {
			Turns int `json:"turns"`
		}
		if err == nil && json.Unmarshal([]byte(out), &list) == nil && len(list) == 1 && list[0].Turns >= n {
			return
		}
	}
}

// KeepGit makes the workspace a git repository and returns the check, run
// when the test ends, that nothing in its .git changed: not the agent's
// captures, rewinds or undos.
func (e *Env) KeepGit() func() {
	e.T.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return func() {}
	}
	if _, errOut, err := e.Run(e.WS, nil, "git", "init", "-q"); err != nil {
		e.T.Fatalf("git init: %v %s", err, errOut)
	}
	before := DirListing(e.T, filepath.Join(e.WS, ".git"))
	return func() {
		if got := DirListing(e.T, filepath.Join(e.WS, ".git")); got != before {
			e.T.Errorf(".git changed:\n%s\nwant:\n%s", got, before)
		}
	}
}

// CkptTurns is `ckpt list --json` as one line per turn: the prompt, then
// each file with its kind.
func (e *Env) CkptTurns(sid string) []string {
	e.T.Helper()
	var list []struct {
		Prompt string `json:"prompt"`
		Files  []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "list", "--json")), &list); err != nil {
		e.T.Fatal(err)
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

// WantTurns checks `ckpt list` of sid, one line per turn (CkptTurns).
func (e *Env) WantTurns(sid string, want ...string) {
	e.T.Helper()
	if got := e.CkptTurns(sid); strings.Join(got, "\n") != strings.Join(want, "\n") {
		e.T.Fatalf("ckpt list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// RewindWant is the tree expected after a rewind to a turn.
type RewindWant struct {
	Turn string
	Want map[string]string
}

// CheckRewinds rewinds sid's code to each turn in code (turn number → the
// tree expected there) and undoes each, then rewinds the conversation and
// both to turn convTurn, whose prompt is convPrompt, and undoes those:
// every tree byte for byte, after is the tree the agent left.
func (e *Env) CheckRewinds(sid string, code []RewindWant, convTurn, convPrompt string, after map[string]string) {
	e.T.Helper()
	for _, tc := range code {
		e.Ckpt("--session", sid, "rewind", tc.Turn, "--scope", "code")
		e.WantFiles("rewind "+tc.Turn+" --scope code", tc.Want)
		e.Ckpt("--session", sid, "undo")
		e.WantFiles("undo of rewind "+tc.Turn+" --scope code", after)
	}
	var atConv map[string]string
	for _, tc := range code {
		if tc.Turn == convTurn {
			atConv = tc.Want
		}
	}
	logBefore := e.Ckpt("--session", sid, "log")

	// Conversation: the log is cut before the turn, its prompt handed back,
	// and the files stay.
	var rj struct {
		Prompt string `json:"prompt"`
		Scope  string `json:"scope"`
	}
	if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "rewind", convTurn, "--scope", "conversation", "--json")), &rj); err != nil {
		e.T.Fatal(err)
	}
	if rj.Prompt != convPrompt || rj.Scope != "conversation" {
		e.T.Errorf("rewind %s --scope conversation: prompt %q scope %q, want %q", convTurn, rj.Prompt, rj.Scope, convPrompt)
	}
	e.WantFiles("rewind "+convTurn+" --scope conversation", after)
	if log := e.Ckpt("--session", sid, "log"); strings.Contains(log, convPrompt) {
		e.T.Errorf("log after rewind %s --scope conversation still has %q:\n%s", convTurn, convPrompt, log)
	}
	e.Ckpt("--session", sid, "undo")
	if log := e.Ckpt("--session", sid, "log"); log != logBefore {
		e.T.Errorf("log after undo:\n%s\nwant:\n%s", log, logBefore)
	}

	// Both: files and conversation together, and undo of both.
	if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "rewind", convTurn, "--scope", "both", "--json")), &rj); err != nil {
		e.T.Fatal(err)
	}
	if rj.Prompt != convPrompt {
		e.T.Errorf("rewind %s --scope both: prompt %q, want %q", convTurn, rj.Prompt, convPrompt)
	}
	e.WantFiles("rewind "+convTurn+" --scope both", atConv)
	if log := e.Ckpt("--session", sid, "log"); strings.Contains(log, convPrompt) {
		e.T.Errorf("log after rewind %s --scope both still has %q:\n%s", convTurn, convPrompt, log)
	}
	e.Ckpt("--session", sid, "undo")
	e.WantFiles("undo of rewind "+convTurn+" --scope both", after)
	if log := e.Ckpt("--session", sid, "log"); log != logBefore {
		e.T.Errorf("log after undo of both:\n%s\nwant:\n%s", log, logBefore)
	}
}
