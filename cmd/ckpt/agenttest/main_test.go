package agenttest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestMain builds the ckpt binary once for the whole package and puts it
// on $PATH as "ckpt", as cmd/ckpt's TestMain puts its test binary there:
// the agents' hooks, plugins and MCP configs name "ckpt", and ckptBinary
// returns its path. A binary that cannot be built fails the package.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ckpt-agenttest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenttest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	name := "ckpt"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/ckpt/ckpt/cmd/ckpt")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "agenttest: go build github.com/ckpt/ckpt/cmd/ckpt: %v\n", err)
		return 1
	}
	if err := os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		fmt.Fprintln(os.Stderr, "agenttest:", err)
		return 1
	}
	return m.Run()
}

// ckptBinary is the path of the ckpt binary TestMain put on $PATH. Tests
// that need it elsewhere copy it; it is shared by every test.
func ckptBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("ckpt")
	if err != nil {
		t.Fatalf("no ckpt on $PATH, which TestMain puts there: %v", err)
	}
	return bin
}
