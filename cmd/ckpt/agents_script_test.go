package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestAgentScripts runs testdata/agentscript against the real binary. Each
// script's $WORK gets hooks/AGENT/*.json: the payload fixtures of
// testdata/hooks (see its README for their sources) with @WORK@ replaced
// by the absolute workspace.
func TestAgentScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/agentscript",
		Setup: func(env *testscript.Env) error {
			env.Setenv("CKPT_HOME", env.T().(testing.TB).TempDir())
			return copyFixtures("testdata/hooks", filepath.Join(env.WorkDir, "hooks"), env.WorkDir)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsonhas": cmdJSONHas,
			"isexec":  cmdIsExec,
		},
	})
}

func copyFixtures(from, to, work string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(strings.ReplaceAll(string(b), "@WORK@", work)), 0o644)
	})
}

func TestPatchPaths(t *testing.T) {
	patch := "*** Begin Patch\r\n*** Add File: x/new.go\r\n+package x\n*** Update File: a.go\n@@\n-a\n+b\n" +
		"*** Delete File: old.go\n*** Update File: from.go\n*** Move to: to.go\n+*** Add File: inside-content.go\n*** End Patch\n"
	got := patchPaths(patch)
	want := []string{"x/new.go", "a.go", "old.go", "from.go", "to.go"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("patchPaths = %q, want %q", got, want)
	}
}
