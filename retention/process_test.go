//go:build unix

package retention_test

// The harness of the process-level tests (crash, concurrency, gc racing a
// capture) and of the gc benchmark: the real ckpt binary, built once per
// test binary, run as separate processes on a store and workspace in
// temporary directories, and a model of the workspace to compare against.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// scratch lists directories made outside any test's TempDir (the built
// binary, the benchmark's template store), removed by TestMain.
var scratch []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range scratch {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// ckptBinary builds cmd/ckpt once per test binary and returns its path.
func ckptBinary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			binErr = fmt.Errorf("no go tool to build ckpt: %w", err)
			return
		}
		out, err := exec.Command(goTool, "env", "GOMOD").Output()
		if err != nil {
			binErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		binDir, err := os.MkdirTemp("", "ckpt-retention-test-")
		if err != nil {
			binErr = err
			return
		}
		scratch = append(scratch, binDir)
		binPath = filepath.Join(binDir, "ckpt")
		build := exec.Command(goTool, "build", "-o", binPath, "./cmd/ckpt")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/ckpt: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

// cliEnv is the environment of every ckpt process: the test's own, without
// the variables that would point ckpt elsewhere than the flags say.
var cliEnv = sync.OnceValue(func() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CKPT_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			env = append(env, kv)
		}
	}
	return env
})

// cli runs the ckpt binary on one session of one store and workspace.
type cli struct {
	bin, store, ws, session string
}

func newCLI(tb testing.TB, store, ws, session string) cli {
	tb.Helper()
	return cli{bin: ckptBinary(tb), store: store, ws: ws, session: session}
}

// command returns the ckpt command line for args, run in the workspace.
// The session goes in $CKPT_SESSION, not --session: `ckpt --session ID
// prune` removes session ID whole.
func (c cli) command(args ...string) *exec.Cmd {
	full := append([]string{"--store", c.store, "--workspace", c.ws}, args...)
	cmd := exec.Command(c.bin, full...)
	cmd.Dir = c.ws
	cmd.Env = append(slices.Clip(cliEnv()), "CKPT_SESSION="+c.session) // a copy: commands start concurrently
	return cmd
}

// result is how a ckpt process ended.
type result struct {
	args           []string
	stdout, stderr string
	code           int  // exit code; -1 when killed
	killed         bool // ended by a signal
}

func (r result) String() string {
	how := fmt.Sprintf("exit %d", r.code)
	if r.killed {
		how = "killed"
	}
	return fmt.Sprintf("ckpt %s: %s\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), how, r.stdout, r.stderr)
}

// exec runs args to the end.
func (c cli) exec(args ...string) result {
	cmd := c.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return ended(args, cmd, err, &stdout, &stderr)
}

func ended(args []string, cmd *exec.Cmd, err error, stdout, stderr *bytes.Buffer) result {
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
		r.killed = r.code == -1
	default:
		r.code, r.stderr = -2, r.stderr+err.Error()
	}
	return r
}

// run runs args and fails the test unless ckpt exits 0 with nothing on
// stderr that looks like a leaked internal error. It returns stdout.
func (c cli) run(tb testing.TB, args ...string) string {
	tb.Helper()
	r := c.exec(args...)
	if r.code != 0 {
		tb.Fatalf("%s", r)
	}
	checkStderr(tb, r)
	return r.stdout
}

// runJSON runs args with --json and decodes stdout into v.
func (c cli) runJSON(tb testing.TB, v any, args ...string) {
	tb.Helper()
	out := c.run(tb, append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		tb.Fatalf("ckpt %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// checkStderr fails on what must never reach a user: a busy database, a
// Go panic or stack trace.
func checkStderr(tb testing.TB, r result) {
	tb.Helper()
	for _, bad := range []string{"database is locked", "SQLITE_BUSY", "panic:", "goroutine "} {
		if strings.Contains(r.stderr, bad) {
			tb.Fatalf("%q reached the user:\n%s", bad, r)
		}
	}
}

// verifyClean runs `ckpt verify --json` and fails unless it exits 0 and
// reports nothing missing or corrupt. It returns the number of orphans.
func (c cli) verifyClean(tb testing.TB) int {
	tb.Helper()
	r := c.exec("--json", "verify")
	if r.code != 0 {
		tb.Fatalf("verify is not clean:\n%s", r)
	}
	var v struct {
		OK     bool `json:"ok"`
		Report struct {
			Findings []struct {
				Kind string `json:"kind"`
			} `json:"findings"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		tb.Fatalf("verify --json: %v\n%s", err, r.stdout)
	}
	orphans := 0
	for _, f := range v.Report.Findings {
		if f.Kind != "orphan" {
			tb.Fatalf("verify exited 0 but found a %s blob:\n%s", f.Kind, r.stdout)
		}
		orphans++
	}
	if !v.OK {
		tb.Fatalf("verify exited 0 with ok=false:\n%s", r.stdout)
	}
	return orphans
}

// listed is one checkpoint of `ckpt list --json`.
type listed struct {
	Turn   int    `json:"turn"`
	Prompt string `json:"prompt"`
	Pruned bool   `json:"pruned"`
	Files  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"files"`
}

func (c cli) list(tb testing.TB) []listed {
	tb.Helper()
	var out []listed
	c.runJSON(tb, &out, "list")
	return out
}

// file is one workspace file of the model: exact bytes and permission bits.
type file struct {
	data string
	mode fs.FileMode
}

// tree is the model of the paths a test manages; a nil entry is a path
// that does not exist.
type tree map[string]*file

func (t tree) clone() tree {
	out := make(tree, len(t))
	for p, f := range t {
		if f != nil {
			g := *f
			f = &g
		}
		out[p] = f
	}
	return out
}

// paths returns the tree's paths, sorted.
func (t tree) paths() []string { return slices.Sorted(maps.Keys(t)) }

// diff describes how got differs from want, or returns "".
func (want tree) diff(got tree) string {
	var b strings.Builder
	for _, p := range want.paths() {
		w, g := want[p], got[p]
		switch {
		case w == nil && g == nil:
		case w == nil:
			fmt.Fprintf(&b, "%s: exists (%d bytes, %v), want absent; ", p, len(g.data), g.mode)
		case g == nil:
			fmt.Fprintf(&b, "%s: absent, want %d bytes %v; ", p, len(w.data), w.mode)
		case g.data != w.data:
			fmt.Fprintf(&b, "%s: holds %.24q, want %.24q; ", p, g.data, w.data)
		case g.mode != w.mode:
			fmt.Fprintf(&b, "%s: mode %v, want %v; ", p, g.mode, w.mode)
		}
	}
	return b.String()
}

// writeTree makes the workspace hold t: files written with their mode,
// nil paths removed.
func writeTree(tb testing.TB, ws string, t tree) {
	tb.Helper()
	for p, f := range t {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if f == nil {
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				tb.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(f.data), f.mode); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chmod(full, f.mode); err != nil { // WriteFile keeps an existing file's mode
			tb.Fatal(err)
		}
	}
}

// readTree reads the paths of like from the workspace.
func readTree(tb testing.TB, ws string, like tree) tree {
	tb.Helper()
	out := tree{}
	for p := range like {
		full := filepath.Join(ws, filepath.FromSlash(p))
		b, err := os.ReadFile(full)
		if errors.Is(err, fs.ErrNotExist) {
			out[p] = nil
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		fi, err := os.Stat(full)
		if err != nil {
			tb.Fatal(err)
		}
		out[p] = &file{data: string(b), mode: fi.Mode().Perm()}
	}
	return out
}

// openSession opens the session in process, without automatic retention,
// for checks the CLI cannot make.
// index opens the session's index directly, as a second process would.
func (c cli) index(tb testing.TB) *checkpoints.Index {
	tb.Helper()
	x, err := checkpoints.OpenSession(context.Background(), c.store, c.session, false)
	if err != nil {
		tb.Fatalf("open index of session %s: %v", c.session, err)
	}
	return x
}

func openSession(tb testing.TB, c cli) *controller.Controller {
	tb.Helper()
	ctl, err := controller.Open(context.Background(), controller.Options{Workspace: c.ws, Store: c.store, Session: c.session, NoAutoRetention: true})
	if err != nil {
		tb.Fatalf("open session %s: %v", c.session, err)
	}
	return ctl
}

// checkSnaps fails unless turn's snapshots are exactly want: one per path,
// naming the blob of its bytes (or none for an absent path) and its mode.
func checkSnaps(tb testing.TB, idx *checkpoints.Index, turn int, want tree) {
	tb.Helper()
	cp, err := idx.Turn(context.Background(), turn)
	if err != nil {
		tb.Fatal(err)
	}
	got := map[string]checkpoints.FileSnap{}
	for _, f := range cp.Files {
		got[f.Path] = f
	}
	if len(got) != len(want) {
		tb.Fatalf("turn %d has %d snapshots, want %d", turn, len(got), len(want))
	}
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			tb.Fatalf("turn %d lost its snapshot of %s", turn, p)
		case w == nil && g.Content != nil:
			tb.Fatalf("turn %d: %s recorded as existing, want absent", turn, p)
		case w == nil:
		case g.Content == nil:
			tb.Fatalf("turn %d: %s recorded as absent, want %d bytes", turn, p, len(w.data))
		case *g.Content != cas.Sum([]byte(w.data)):
			tb.Fatalf("turn %d: %s recorded as blob %s, want %s", turn, p, g.Content.Short(), cas.Sum([]byte(w.data)).Short())
		case g.Mode.Perm() != w.mode:
			tb.Fatalf("turn %d: %s recorded with mode %v, want %v", turn, p, g.Mode.Perm(), w.mode)
		}
	}
}

// checkRewinds rewinds the session's code to every turn from first on and
// compares the workspace with starts[turn], exactly; then it undoes each
// rewind and expects now back. Turns before first must refuse a code
// rewind with ErrPruned. It runs in process, on the real store.
func checkRewinds(tb testing.TB, c cli, starts []tree, first int, now tree) {
	tb.Helper()
	ctx := context.Background()
	ctl := openSession(tb, c)
	defer ctl.Close()
	for turn := range starts {
		res, err := ctl.Rewind(ctx, controller.Target{Turn: turn}, checkpoints.ScopeCode, controller.RewindOptions{})
		if turn < first {
			if !errors.Is(err, checkpoints.ErrPruned) {
				tb.Fatalf("rewind to pruned turn %d: %v, want ErrPruned", turn, err)
			}
			continue
		}
		if err != nil {
			tb.Fatalf("rewind to turn %d: %v", turn, err)
		}
		if d := starts[turn].diff(readTree(tb, c.ws, starts[turn])); d != "" {
			tb.Fatalf("rewind to turn %d: %s", turn, d)
		}
		if !res.Changed {
			continue // the workspace was at turn's start already: nothing to undo
		}
		if _, err := ctl.Undo(ctx, controller.RewindOptions{}); err != nil {
			tb.Fatalf("undo the rewind to turn %d: %v", turn, err)
		}
		if d := now.diff(readTree(tb, c.ws, now)); d != "" {
			tb.Fatalf("undo the rewind to turn %d: %s", turn, d)
		}
	}
}

// strayObjects lists the object files under STORE/blobs/objects that no
// blob row names: what a crash between an object file's rename and its
// row's commit, or between a delete's commit and its unlink, leaves.
func strayObjects(tb testing.TB, store string) []string {
	tb.Helper()
	ctx := context.Background()
	d, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	files, err := filepath.Glob(filepath.Join(checkpoints.BlobDir(store), "objects", "*", "*"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, f := range files {
		id, err := cas.ParseID(filepath.Base(f))
		if err != nil {
			out = append(out, f)
			continue
		}
		if ok, err := d.Has(ctx, id); err != nil {
			tb.Fatal(err)
		} else if !ok {
			out = append(out, f)
		}
	}
	return out
}
