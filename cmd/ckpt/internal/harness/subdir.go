package harness

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent"
)

// SubdirPrompt is the prompt every agent gets in the subdirectory tests.
const SubdirPrompt = "write the note"

// SubdirDirs makes a test's workspace, home and store (TestDirs) and the
// workspace's subdirectory "sub"; with git the workspace is also a git
// repository's root (the test skips if git init fails).
func SubdirDirs(t *testing.T, git bool) (ws, home, store, sub string) {
	t.Helper()
	ws, home, store = TestDirs(t)
	sub = MkSub(t, ws)
	if git {
		if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
			t.Skipf("git init: %v %s", err, out)
		}
	}
	return ws, home, store, sub
}

// SubdirSession is the session of e's store that recorded the note the
// agent wrote in ws/sub: its id and workspace ("" when none did).
func (e *Env) SubdirSession() (id, workspace string, files []string) {
	e.T.Helper()
	var list []struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal([]byte(e.Ckpt("sessions", "--json")), &list); err != nil {
		e.T.Fatal(err)
	}
	for _, s := range list {
		for _, turn := range e.CkptTurns(s.ID) {
			if strings.Contains(turn, "note.txt") {
				return s.ID, s.Workspace, []string{turn}
			}
		}
	}
	return "", "", nil
}

// CheckSubdir checks what `ckpt install AGENT` in e.WS and the agent's run
// in e.WS/sub left: the note the agent wrote there was captured into a
// session of the workspace e.WS (not of sub); or, for an agent that does
// not load the workspace's hooks from a subdirectory (subdirLoad), install
// said so and nothing was captured: were the agent to start loading them,
// this fails, and subdirLoad must change.
func (e *Env) CheckSubdir(name, installErr string) {
	e.T.Helper()
	id, ws, turns := e.SubdirSession()
	e.T.Logf("%s in a subdirectory: session %q, workspace %q, turns %q", name, id, ws, turns)
	ag, ok := agent.Lookup(name)
	if !ok {
		e.T.Fatalf("no agent %q", name)
	}
	if note := agent.SubdirNote(ag, e.WS); note != "" {
		if !strings.Contains(installErr, "ckpt: note: "+note) {
			e.T.Errorf("install %s did not say %q; it said:\n%s", name, note, installErr)
		}
		if id != "" {
			e.T.Errorf("%s loaded the workspace's hooks from a subdirectory after all (session %s): subdirLoad is out of date", name, id)
		}
		return
	}
	if id == "" {
		e.T.Errorf("%s run in %s/sub: nothing captured", name, e.WS)
		return
	}
	if ws != e.WS {
		e.T.Errorf("%s run in %s/sub: session %s has workspace %s, want %s", name, e.WS, id, ws, e.WS)
	}
	if len(turns) != 1 || !strings.Contains(turns[0], " sub/note.txt=created") {
		e.T.Errorf("%s: turns %q, want sub/note.txt created", name, turns)
	}
}
