package demo

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPlayRunsTheScript: every command goes to the Runner with the demo's
// workspace and store, is echoed as typed (paths relative to the
// workspace), and the agent's writes land in the workspace.
func TestPlayRunsTheScript(t *testing.T) {
	dir := t.TempDir()
	ws, store := filepath.Join(dir, "workspace"), filepath.Join(dir, "store")
	var got [][]string
	ckpt := func(_ context.Context, args []string, _ io.Writer) int {
		if len(args) < 4 || args[0] != "--workspace" || args[1] != ws || args[2] != "--store" || args[3] != store {
			t.Errorf("command without the demo's workspace and store: %q", args)
			return 2
		}
		got = append(got, args[4:])
		return 0
	}
	var out bytes.Buffer
	if err := Play(context.Background(), &out, dir, ckpt); err != nil {
		t.Fatal(err)
	}
	if len(got) < 10 || !reflect.DeepEqual(got[0], []string{"turn", "Create a greeting module"}) ||
		!reflect.DeepEqual(got[1], []string{"capture", filepath.Join(ws, "hello.py")}) ||
		!reflect.DeepEqual(got[len(got)-1], []string{"log"}) {
		t.Errorf("commands run: %q", got)
	}
	for _, want := range []string{"$ ckpt turn 'Create a greeting module'\n", "$ ckpt capture hello.py\n", "$ ckpt rewind 1 --scope code\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "tests", "test_hello.py")); err != nil || !strings.Contains(string(b), "greet('Ada')") {
		t.Errorf("the agent's write: %q, %v", b, err)
	}
}

// TestPlayStopsAtAFailure: after a command fails nothing more runs or
// prints, and the error names the command and its exit code.
func TestPlayStopsAtAFailure(t *testing.T) {
	n := 0
	ckpt := func(_ context.Context, args []string, _ io.Writer) int {
		n++
		if args[4] == "capture" {
			return 1
		}
		return 0
	}
	var out bytes.Buffer
	err := Play(context.Background(), &out, t.TempDir(), ckpt)
	if err == nil || !strings.Contains(err.Error(), "demo: ckpt capture ") || !strings.HasSuffix(err.Error(), " exited 1") {
		t.Fatalf("err = %v", err)
	}
	if n != 2 {
		t.Errorf("%d commands ran, want 2 (turn, then the failing capture)", n)
	}
	if s := out.String(); strings.Contains(s, "agent writes") || !strings.HasSuffix(s, "$ ckpt capture hello.py\n") {
		t.Errorf("output after the failure:\n%s", s)
	}
}
