// Package harness is what the real-agent test packages (cmd/ckpt/agenttest,
// cmd/ckpt/agenttest2 and cmd/ckpt/agenttest3) share: the ckpt binary
// their TestMain builds, an Env that runs a real agent CLI and ckpt in
// isolated directories, and the checks of what ckpt recorded. It is
// imported by tests only.
package harness

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Main is a real-agent test package's TestMain: it builds the ckpt binary
// once for the whole package, puts it on $PATH as "ckpt" (the agents'
// hooks, plugins and MCP configs name "ckpt"; CkptBinary returns its
// path), runs the tests and returns the exit code. A binary that cannot be
// built fails the package.
func Main(m *testing.M) int {
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

// CkptBinary is the path of the ckpt binary Main put on $PATH. Tests that
// need it elsewhere copy it; it is shared by every test.
func CkptBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("ckpt")
	if err != nil {
		t.Fatalf("no ckpt on $PATH, which TestMain puts there: %v", err)
	}
	return bin
}

// AgentBin finds a real agent CLI: $envVar, else name on $PATH; it skips
// the test, saying how to get one, when there is none.
func AgentBin(t *testing.T, envVar, name, pkg string) string {
	t.Helper()
	if b := os.Getenv(envVar); b != "" {
		return b
	}
	if b, err := exec.LookPath(name); err == nil {
		return b
	}
	t.Skipf("no %s CLI: set $%s or put %s on $PATH (npm install %s); .ci/run does", name, envVar, name, pkg)
	return ""
}

// TestDirs makes the workspace (symlinks resolved, as agents report it),
// a home and a store for a real-agent test, and checks that TestMain put
// ckpt on $PATH.
func TestDirs(t *testing.T) (ws, home, store string) {
	t.Helper()
	if _, err := exec.LookPath("ckpt"); err != nil {
		t.Skip("no ckpt on $PATH (TestMain builds it and puts it there)")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws, t.TempDir(), t.TempDir()
}

// IsolatedEnv is the test process's environment without the variables
// whose names start with one of drop (and without CKPT_*, HOME and XDG_*),
// plus set.
func IsolatedEnv(drop []string, set ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range append([]string{"CKPT_", "XDG_"}, drop...) {
			if strings.HasPrefix(k, p) {
				continue next
			}
		}
		if k != "HOME" {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// MkSub makes the subdirectory "sub" of ws and returns its path.
func MkSub(t *testing.T, ws string) string {
	t.Helper()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return sub
}

// DirListing lists every file under dir with its size, mode and content
// hash, one per line.
func DirListing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := ""
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		fmt.Fprintf(&b, "%s %v %d %s\n", rel, fi.Mode(), fi.Size(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// SeedPluginDeps marks dir, a configuration directory of OpenCode or of
// an agent built on it (Kilo), as having its plugin SDK sdk installed
// (@opencode-ai/plugin, @kilocode/plugin). The agent otherwise runs an
// npm install of it into every configuration directory it loads (the
// project's and the user's), from the registry, on first use: half a
// minute, and no business of these tests (ckpt's plugin imports nothing
// from it).
func SeedPluginDeps(t *testing.T, dir, sdk string) {
	t.Helper()
	deps := `{"dependencies": {"` + sdk + `": "*"}}`
	lock := `{"lockfileVersion": 3, "packages": {"": {"dependencies": {"` + sdk + `": "*"}}}}`
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"package.json": deps, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
