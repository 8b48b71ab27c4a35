package hook

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// TestMCPSession: under Claude Code an MCP server takes Claude's session
// id and, while the store lacks that session, Claude's project directory
// as the workspace when the current directory is inside it; without a
// valid id, nothing.
func TestMCPSession(t *testing.T) {
	ctx := context.Background()
	const id = "11111111-1111-4111-8111-111111111111"
	proj, store := t.TempDir(), t.TempDir()
	sub := filepath.Join(proj, "sub")
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	claude := env(map[string]string{"CLAUDE_CODE_SESSION_ID": id, "CLAUDE_PROJECT_DIR": proj})
	for _, tc := range []struct {
		name, dir string
		getenv    func(string) string
		ok        bool
		ws        string
	}{
		{"no agent", sub, env(nil), false, ""},
		{"bad id", sub, env(map[string]string{"CLAUDE_CODE_SESSION_ID": "../x"}), false, ""},
		{"inside the project", sub, claude, true, proj},
		{"outside it", t.TempDir(), claude, true, ""},
		{"workspace settled", "", claude, true, ""},
	} {
		s, ws, ok, err := MCPSession(ctx, store, tc.dir, tc.getenv)
		if err != nil || ok != tc.ok || ws != tc.ws || ok && s != id {
			t.Errorf("%s: %q %q %v %v; want ok %v, workspace %q", tc.name, s, ws, ok, err, tc.ok, tc.ws)
		}
	}
	// Once the store has the session, its own workspace holds: none here.
	c, err := controller.Open(ctx, controller.Options{Workspace: t.TempDir(), Store: store, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if s, ws, ok, err := MCPSession(ctx, store, sub, claude); err != nil || !ok || s != id || ws != "" {
		t.Errorf("known session: %q %q %v %v; want the id and no workspace", s, ws, ok, err)
	}
}
