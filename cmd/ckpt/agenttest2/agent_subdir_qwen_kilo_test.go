package agenttest2_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestQwenKiloInSubdirRealBinary runs the real Qwen Code and Kilo Code
// CLIs in a subdirectory of the workspace `ckpt install qwen` / `ckpt
// install kilo` was run in, outside a git repository and at its root, as
// TestAgentsInSubdirRealBinary does for the other agents: what each writes
// there is captured into the workspace's session, or install said it
// would not be (checkSubdir). Kilo loads the workspace's plugin from
// there and is captured; Qwen Code reads .qwen/ only where it starts, so
// install and ckpt status say so.
func TestQwenKiloInSubdirRealBinary(t *testing.T) {
	t.Parallel()
	for _, git := range []bool{false, true} {
		name := "no git"
		if git {
			name = "git root"
		}
		t.Run(name, func(t *testing.T) {
			// ws and its subdirectory sub, a git repository's root with git.
			dirs := func(t *testing.T) (ws, home, store, sub string) {
				ws, home, store = harness.TestDirs(t)
				sub = harness.MkSub(t, ws)
				if git {
					if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
						t.Skipf("git init: %v %s", err, out)
					}
				}
				return ws, home, store, sub
			}
			t.Run("qwen", func(t *testing.T) {
				qwen := harness.AgentBin(t, "CKPT_QWEN_BIN", "qwen", "@qwen-code/qwen-code")
				ws, home, store, sub := dirs(t)
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
			t.Run("kilo", func(t *testing.T) {
				kilo := harness.AgentBin(t, "CKPT_KILO_BIN", "kilo", "@kilocode/cli")
				ws, home, store, sub := dirs(t)
				srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{harness.SubdirPrompt: {
					{Tool: "write", Input: map[string]any{"filePath": filepath.Join(sub, "note.txt"), "content": "note\n"}},
					{Text: "Written."},
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				e := newKiloEnv(t, ws, home, store, srv)
				out := e.Install("kilo")
				seedKiloDeps(t, filepath.Join(ws, ".kilo"))
				if o, errOut, err := e.Run(sub, nil, kilo, append([]string{"run", "--auto"}, strings.Fields(harness.SubdirPrompt)...)...); err != nil {
					t.Fatalf("kilo: %v\n%s\n%s", err, o, errOut)
				}
				e.WantFiles("after kilo in sub", map[string]string{"sub/note.txt": "note\n"})
				e.CheckSubdir("kilo", out)
			})
		})
	}
}
