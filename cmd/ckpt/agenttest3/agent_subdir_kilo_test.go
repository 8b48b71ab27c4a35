package agenttest3_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestKiloInSubdirRealBinary runs the real Kilo Code CLI in a
// subdirectory of the workspace `ckpt install kilo` was run in, outside a
// git repository and at its root, as TestAgentsInSubdirRealBinary does
// for the other agents: Kilo loads the workspace's plugin from there, and
// what it writes there is captured into the workspace's session
// (checkSubdir).
func TestKiloInSubdirRealBinary(t *testing.T) {
	t.Parallel()
	for _, git := range []bool{false, true} {
		name := "no git"
		if git {
			name = "git root"
		}
		t.Run(name, func(t *testing.T) {
			kilo := harness.AgentBin(t, "CKPT_KILO_BIN", "kilo", "@kilocode/cli")
			ws, home, store, sub := harness.SubdirDirs(t, git)
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
	}
}
