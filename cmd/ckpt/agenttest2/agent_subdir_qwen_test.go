package agenttest2_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestQwenInSubdirRealBinary runs the real Qwen Code CLI in a
// subdirectory of the workspace `ckpt install qwen` was run in, outside a
// git repository and at its root, as TestAgentsInSubdirRealBinary does
// for the other agents (TestKiloInSubdirRealBinary for Kilo Code): Qwen
// Code reads .qwen/ only where it starts, so nothing is captured, and
// install and ckpt status say so (checkSubdir).
func TestQwenInSubdirRealBinary(t *testing.T) {
	t.Parallel()
	for _, git := range []bool{false, true} {
		name := "no git"
		if git {
			name = "git root"
		}
		t.Run(name, func(t *testing.T) {
			qwen := harness.AgentBin(t, "CKPT_QWEN_BIN", "qwen", "@qwen-code/qwen-code")
			ws, home, store, sub := harness.SubdirDirs(t, git)
			srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{harness.SubdirPrompt: {
				{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
				{Text: "Written."},
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			e := newQwenEnv(t, ws, home, store, srv)
			out := e.Install("qwen")
			if o, errOut, err := e.Run(sub, nil, qwen, "-p", harness.SubdirPrompt, "--approval-mode", "yolo"); err != nil {
				t.Fatalf("qwen: %v\n%s\n%s", err, o, errOut)
			}
			e.WantFiles("after qwen in sub", map[string]string{"sub/note.txt": "note\n"})
			e.CheckSubdir("qwen", out)
			// ckpt status run where Qwen Code was says so too, also
			// while the workspace has no session (and status fails).
			ag, _ := agent.Lookup("qwen")
			if _, errOut, _ := e.Run(sub, nil, "ckpt", "status"); !strings.Contains(errOut, "ckpt: warning: "+agent.SubdirNote(ag, ws)) {
				t.Errorf("ckpt status in %s said:\n%s\nwithout the note that Qwen Code runs no hooks there", sub, errOut)
			}
		})
	}
}
