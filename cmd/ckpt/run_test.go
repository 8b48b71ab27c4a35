package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/internal/demo"
)

// ckptRun runs the CLI in-process with a fresh store and workspace.
func ckptRun(t *testing.T, ws, store string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"--workspace", ws, "--store", store}, args...)
	code = run(context.Background(), full, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodesAndOneLineErrors(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	if code, _, _ := ckptRun(t, ws, store, "turn", "t0"); code != exitOK {
		t.Fatalf("turn exited %d", code)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"rewind", "5"}, exitFail, "no such turn"},
		{[]string{"rewind"}, exitUsage, "rewind takes one TURN"},
		{[]string{"rewind", "abc"}, exitUsage, "whole number"},
		{[]string{"rewind", "0.1"}, exitFail, "no such step"},
		{[]string{"rewind", "0.0"}, exitUsage, "a step is a number from 1"},
		{[]string{"rewind", "0.1", "--scope", "both"}, exitUsage, "a step rewinds code only"},
		{[]string{"diff", "0.x"}, exitUsage, "a step is a number from 1"},
		{[]string{"rewind", "0", "--scope", "all"}, exitUsage, "scope must be"},
		{[]string{"rewind", "0", "--bogus"}, exitUsage, "unknown flag"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{[]string{"capture"}, exitUsage, "one or more PATHs"},
		{[]string{"capture", "/etc/passwd"}, exitFail, "outside the workspace"},
		{[]string{"message", "robot", "x"}, exitUsage, "role must be"},
		{[]string{"--session", "../evil", "list"}, exitUsage, "session id must be"},
		{[]string{"undo"}, exitFail, "nothing to undo"},
		{[]string{"redo"}, exitFail, "nothing to redo"},
		{[]string{"undo", "--op", "-3"}, exitUsage, "--op must be an op ID"},
		{[]string{"redo", "--op", "7"}, exitFail, "op 7: not found"},
		{[]string{"history", "extra"}, exitUsage, "no arguments"},
		{[]string{"list", "extra"}, exitUsage, "no arguments"},
		{[]string{"turn", ""}, exitUsage, "the prompt is empty"},
		{[]string{"message", "user", " "}, exitUsage, "the message is empty"},
		{[]string{"capture", ""}, exitUsage, "a PATH is empty"},
		{[]string{"--session", "", "list"}, exitUsage, `session ""`},
		{[]string{"fork", "0", "--to", "bad id!"}, exitUsage, "--to \"bad id!\""},
		{[]string{"unpin", "99"}, exitFail, "unpin turn 99: no such turn (`ckpt list` shows the turns)"},
		{[]string{"rewind", "99"}, exitFail, "rewind to turn 99: no such turn ("},
		{[]string{"prune", "--keep", "-3"}, exitUsage, "--keep must be a number of turns ≥ 0"},
		{[]string{"prune", "--keep=-1"}, exitUsage, "--keep must be"},
		{[]string{"prune", "--keep", "x"}, exitUsage, `invalid argument "x" for "--keep"`},
		{[]string{"prune", "--max-bytes", "-5"}, exitUsage, `--max-bytes: "-5" is not a size`},
		{[]string{"prune", "--max-bytes="}, exitUsage, `--max-bytes: "" is not a size`},
		{[]string{"prune", "--max-age=-2d"}, exitUsage, `--max-age: "-2d" is not a number of days`},
		{[]string{"prune", "--max-age", "1e30d"}, exitUsage, `--max-age: "1e30d"`},
		{[]string{"prune", "--max-age", "-1h"}, exitUsage, `--max-age: "-1h" is not a duration`},
		{[]string{"prune", "--grace", "-1h"}, exitUsage, `--grace: "-1h"`},
		{[]string{"gc", "--grace", "NaNd"}, exitUsage, `--grace: "NaNd"`},
		{[]string{"--json", "demo"}, exitUsage, "demo is a tour for people and has no --json output"},
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, exitUsage, `bad port "99999"`},
		{[]string{"install", "codex", "--statusline"}, exitUsage, "--statusline is for claude"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, _, stderr := ckptRun(t, ws, store, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if !strings.HasPrefix(stderr, "ckpt: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
				t.Errorf("stderr %q, want one line 'ckpt: ...%s...'", stderr, tc.msg)
			}
		})
	}
}

// TestHelpCoversEveryAgent: install, uninstall and hook take every agent
// of the registry, so their help says so, in the command list too.
func TestHelpCoversEveryAgent(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	code, list, stderr := ckptRun(t, ws, store, "help")
	if code != exitOK {
		t.Fatalf("help exited %d: %s", code, stderr)
	}
	var installLine string
	for _, l := range strings.Split(list, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "install ") {
			installLine = l
		}
	}
	for _, cmd := range []string{"install", "uninstall", "hook"} {
		_, long, _ := ckptRun(t, ws, store, "help", cmd)
		for _, name := range agent.Names() {
			if cmd == "install" && !strings.Contains(installLine, name) {
				t.Errorf("ckpt help lists install as %q, which does not name %s", installLine, name)
			}
			if !strings.Contains(long, name) && !(cmd != "install" && strings.Contains(long, "ckpt install --help")) {
				t.Errorf("ckpt help %s does not name %s", cmd, name)
			}
		}
		if strings.Contains(long, "Claude Code's hooks (") || strings.Contains(long, "from Claude Code's settings") {
			t.Errorf("ckpt help %s still speaks of Claude Code alone:\n%s", cmd, long)
		}
	}
	// So does the one-page overview of the CLI reference.
	overview, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, entry, _ := strings.Cut(string(overview), "\nckpt install [AGENT...]")
	entry, _, _ = strings.Cut(entry, "\nckpt install claude")
	for _, name := range agent.Names() {
		if !strings.Contains(entry, " "+name+",") && !strings.Contains(entry, " "+name+" ") {
			t.Errorf("docs/cli.md's ckpt install entry does not name %s", name)
		}
	}
	// The Claude Code topic names the other agents install wires the same way.
	_, topic, _ := ckptRun(t, ws, store, "help", "claude")
	for _, name := range agent.Names() {
		if !strings.Contains(topic, name) {
			t.Errorf("ckpt help claude does not name %s", name)
		}
	}
}

func TestWorkspaceAndSessionFromEnvironment(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	t.Setenv("CKPT_WORKSPACE", ws)
	t.Setenv("CKPT_SESSION", "env-session")
	t.Setenv("CKPT_HOME", store)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"turn", "hi"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(store, "sessions", "env-session", "index.db")); err != nil {
		t.Errorf("session index not where CKPT_HOME and CKPT_SESSION say: %v", err)
	}
}

func TestDemoRuns(t *testing.T) {
	var out bytes.Buffer
	if err := demo.Play(context.Background(), &out, t.TempDir(), runDemoCmd); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"$ ckpt list", "$ ckpt diff 1", "$ ckpt rewind 1 --scope code", "$ ckpt undo", "README.md", "(empty)"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}
