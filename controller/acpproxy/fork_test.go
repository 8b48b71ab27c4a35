package acpproxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/acpproxy"
)

// TestProxyForkIsACkptFork: an ACP session/fork records into a ckpt fork
// of the source session after its last turn: the fork holds and rewinds
// the source's turns and its own, its parent link names the source and
// that turn, and the source is left as it was. A fork of a session ckpt
// does not record is recorded as a new session.
func TestProxyForkIsACkptFork(t *testing.T) {
	c, ws, store := start(t, false)
	const sid = "sess/1"
	orig := "original\r\nno newline at the end"
	c.Prompt(sid, "write keep.txt=changed")
	c.Prompt(sid, "write new.txt=one")

	resp, _ := c.Request("session/fork", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}})
	if !strings.Contains(resp, `"result":{"sessionId":"fork-1"}`) {
		t.Fatalf("session/fork answer: %s", resp)
	}
	const fork = "fork-1"
	c.Prompt(fork, "write new.txt=two")
	wantFiles(t, ws, "after the fork's prompt", map[string]string{"keep.txt": "changed", "new.txt": "two"})

	_, said := c.Prompt(fork, "/checkpoints")
	for _, w := range []string{"ckpt session " + fork, "turn 0", "write keep.txt=changed", "turn 1", "turn 2", "write new.txt=two"} {
		if !strings.Contains(said, w) {
			t.Errorf("/checkpoints in the fork says:\n%s\nwithout %q", said, w)
		}
	}
	// The fork rewinds the turns it took from its source.
	_, said = c.Prompt(fork, "/rewind 0")
	wantFiles(t, ws, "/rewind 0 in the fork ("+said+")", map[string]string{"keep.txt": orig})
	c.Prompt(fork, "/undo")
	wantFiles(t, ws, "/undo in the fork", map[string]string{"keep.txt": "changed", "new.txt": "two"})
	// The source has its two turns and nothing to undo.
	if _, said = c.Prompt(sid, "/undo"); said != "Nothing to undo." {
		t.Errorf("/undo in the source says %q", said)
	}
	if _, said = c.Prompt(sid, "/checkpoints"); strings.Contains(said, "turn 2") || !strings.Contains(said, "turn 1") {
		t.Errorf("/checkpoints in the source says:\n%s", said)
	}

	// A fork of a session the proxy never saw is a session of its own.
	resp, _ = c.Request("session/fork", map[string]any{"sessionId": "unknown", "cwd": ws, "mcpServers": []any{}})
	if !strings.Contains(resp, `"result":{"sessionId":"fork-2"}`) {
		t.Fatalf("session/fork answer: %s", resp)
	}
	c.Prompt("fork-2", "write other.txt=x")

	st := controller.OpenStore(store)
	defer st.Close()
	infos, err := st.Sessions(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, i := range infos {
		parents[i.ID] = "-"
		if i.Parent != "" {
			parents[i.ID] = fmt.Sprintf("%s turn %d", i.Parent, i.ParentTurn)
		}
	}
	want := map[string]string{acpproxy.SessionID(sid): "-", fork: acpproxy.SessionID(sid) + " turn 2", "fork-2": "-"}
	for id, p := range want {
		if parents[id] != p {
			t.Errorf("session %s: parent %q, want %q (sessions %v)", id, parents[id], p, parents)
		}
	}
	if len(parents) != len(want) {
		t.Errorf("sessions %v, want %v", parents, want)
	}
}

// TestProxyForkOfAnEarlierConnectionsSession: a session recorded through
// an earlier connection (the editor restarted) forks as one recorded
// through this one; a fork whose cwd is another workspace than its
// source's is a session of its own.
func TestProxyForkOfAnEarlierConnectionsSession(t *testing.T) {
	c, ws, store := start(t, true)
	c.Prompt("sess/1", "write keep.txt=changed")

	// A second editor connection on the same store, which never saw sess/1.
	c2 := proxied(t, store, true)
	c2.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	c2.Line() // the test agent answers initialize as id 0
	resp, _ := c2.Request("session/fork", map[string]any{"sessionId": "sess/1", "cwd": ws, "mcpServers": []any{}})
	if !strings.Contains(resp, `"sessionId":"fork-1"`) {
		t.Fatalf("session/fork answer: %s", resp)
	}
	other := t.TempDir()
	if resp, _ = c2.Request("session/fork", map[string]any{"sessionId": "sess/1", "cwd": other, "mcpServers": []any{}}); !strings.Contains(resp, `"sessionId":"fork-2"`) {
		t.Fatalf("session/fork answer: %s", resp)
	}
	_, said := c2.Prompt("fork-1", "/rewind 0")
	wantFiles(t, ws, "/rewind 0 in the fork ("+said+")", map[string]string{"keep.txt": "original\r\nno newline at the end"})

	st := controller.OpenStore(store)
	defer st.Close()
	infos, err := st.Sessions(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, i := range infos {
		got[i.ID] = i.Workspace
		if i.Parent != "" {
			got[i.ID] += fmt.Sprintf(" from %s turn %d", i.Parent, i.ParentTurn)
		}
	}
	otherRoot, err := filepath.EvalSymlinks(other)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{acpproxy.SessionID("sess/1"): ws, "fork-1": ws + " from " + acpproxy.SessionID("sess/1") + " turn 1", "fork-2": otherRoot}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sessions:\n%v\nwant\n%v", got, want)
	}
}

// TestProxySessionInASubdirectory: an editor that starts the agent in a
// subdirectory of a workspace the store knows (`ckpt install` marked it)
// records into a session of that workspace, as a hook of an agent started
// there does, not into one rooted at the subdirectory.
func TestProxySessionInASubdirectory(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	st := controller.OpenStore(store)
	defer st.Close()
	if _, err := st.WorkspaceScan(ws, "none"); err != nil { // what install does with --no-scan
		t.Fatal(err)
	}
	c := proxied(t, store, true)
	c.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}}`)
	c.Line()
	c.Next = 0
	if resp, _ := c.Request("session/new", map[string]any{"cwd": sub, "mcpServers": []any{}}); !strings.Contains(resp, `"sessionId":"sess/1"`) {
		t.Fatalf("session/new answer: %s", resp)
	}
	c.Prompt("sess/1", "write note.txt=from the subdirectory")
	loc, err := st.Resolve(context.Background(), controller.ResolveOptions{Session: acpproxy.SessionID("sess/1")})
	if err != nil || !loc.OfSession || loc.Workspace != ws {
		t.Fatalf("the session's workspace is %+v (%v), want %q", loc, err, ws)
	}
	_, said := c.Prompt("sess/1", "/rewind 0")
	if _, err := os.Stat(filepath.Join(sub, "note.txt")); !os.IsNotExist(err) {
		t.Errorf("/rewind 0 (%s) left sub/note.txt: %v", said, err)
	}
}
