//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// asUser runs the real ckpt binary as another user (nobody) in a workspace
// and store that user owns, beside files of this one (root) it cannot
// read: what a user meets who shares a checkout with root-owned build
// output. The tests run as root, which reads everything.
type asUser struct {
	t              *testing.T
	bin, ws, store string
	home           string
	uid, gid       uint32
	session        string
}

func newAsUser(t *testing.T) *asUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run ckpt as another user and make files it cannot read")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	dir := t.TempDir()
	e := &asUser{t: t, ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "store"), home: filepath.Join(dir, "home"),
		uid: uint32(uid), gid: uint32(gid), session: "s1"}
	// The binary and every directory down to the workspace must be
	// reachable by nobody (t.TempDir makes them 0700).
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A copy of the shared test binary where nobody can run it.
	e.bin = filepath.Join(dir, "ckpt")
	data, err := os.ReadFile(ckptBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{e.ws, e.store, e.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, int(e.uid), int(e.gid)); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// write makes a file of nobody's in the workspace.
func (e *asUser) write(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.ws, rel)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chown(p, int(e.uid), int(e.gid)); err != nil {
		e.t.Fatal(err)
	}
}

// lock makes rel (a file or directory) root's, mode 0600 or 0700:
// nobody may not read it.
func (e *asUser) lock(rel string) {
	e.t.Helper()
	p := filepath.Join(e.ws, rel)
	fi, err := os.Stat(p)
	if err != nil {
		e.t.Fatal(err)
	}
	mode := os.FileMode(0o600)
	if fi.IsDir() {
		mode = 0o700
	}
	if err := os.Chown(p, 0, 0); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		e.t.Fatal(err)
	}
}

// run runs ckpt as nobody with stdin and returns its stdout, stderr and
// exit code.
func (e *asUser) run(stdin string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir, cmd.Stdin = e.ws, strings.NewReader(stdin)
	cmd.Env = []string{"HOME=" + e.home, "CKPT_HOME=" + e.store, "PATH=" + os.Getenv("PATH"), "CKPT_SESSION=" + e.session}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: e.uid, Gid: e.gid}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// ok runs ckpt as nobody and fails the test unless it exits 0.
func (e *asUser) ok(args ...string) (string, string) {
	e.t.Helper()
	out, errs, code := e.run("", args...)
	if code != 0 {
		e.t.Fatalf("ckpt %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out, errs
}

// hook sends one Claude Code event to `ckpt hook claude` (extra flags
// after it) as nobody.
func (e *asUser) hook(event string, fields map[string]any, flags ...string) (string, string, int) {
	e.t.Helper()
	ev := map[string]any{"session_id": e.session, "cwd": e.ws, "hook_event_name": event}
	for k, v := range fields {
		ev[k] = v
	}
	b, _ := json.Marshal(ev)
	return e.run(string(b), append([]string{"hook", "claude"}, flags...)...)
}

func (e *asUser) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// listing is `ckpt list --json` as nobody: each turn's prompt and the
// paths of its files.
func (e *asUser) listing() []string {
	e.t.Helper()
	out, _ := e.ok("--json", "list")
	var turns []struct {
		Prompt string `json:"prompt"`
		Files  []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &turns); err != nil {
		e.t.Fatalf("list --json: %v\n%s", err, out)
	}
	var got []string
	for _, t := range turns {
		var paths []string
		for _, f := range t.Files {
			paths = append(paths, f.Path)
		}
		got = append(got, fmt.Sprintf("%s:%s", t.Prompt, strings.Join(paths, ",")))
	}
	return got
}

// An unreadable file or directory in a scan-mode workspace is skipped and
// named, and so is a directory whose .gitignore is unreadable (what it
// leaves out is unknown); the turn opens with a manifest of the rest. It used to fail the
// scan, so that no turn opened at all.
func TestScanSkipsUnreadableEntries(t *testing.T) {
	e := newAsUser(t)
	e.write("ok.txt", "ok\n")
	e.write("locked.txt", "root's\n")
	e.lock("locked.txt")
	if err := os.Mkdir(filepath.Join(e.ws, "priv"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("priv/in.txt", "in\n")
	e.lock("priv")
	if err := os.Mkdir(filepath.Join(e.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(e.ws, "sub"), int(e.uid), int(e.gid)); err != nil {
		t.Fatal(err)
	}
	e.write("sub/in.txt", "in\n")
	e.write("sub/.gitignore", "*.log\n")
	e.lock("sub/.gitignore")

	out, errs := e.ok("--json", "turn", "--scan", "t0")
	var res struct {
		Scanned bool `json:"scanned"`
		Scan    struct {
			Files   int `json:"files"`
			Skipped []struct {
				Path   string `json:"path"`
				Reason string `json:"reason"`
			} `json:"skipped"`
		} `json:"scan"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("turn --json: %v\n%s", err, out)
	}
	if !res.Scanned || res.Scan.Files != 1 {
		t.Errorf("turn --scan: scanned %v, %d files; want a manifest of ok.txt", res.Scanned, res.Scan.Files)
	}
	got := fmt.Sprint(res.Scan.Skipped)
	if want := "[{locked.txt unreadable: permission denied} {priv unreadable: permission denied} {sub its .gitignore is unreadable: permission denied}]"; got != want {
		t.Errorf("skipped %s, want %s", got, want)
	}
	if !strings.Contains(errs, "locked.txt (unreadable: permission denied)") || !strings.Contains(errs, "priv (unreadable") {
		t.Errorf("turn --scan said %q; want the skipped entries named", errs)
	}

	// The root's own rules unreadable: what the scan would leave out is
	// unknown anywhere, so the turn opens without a manifest, and says so.
	e.write(".gitignore", "*.log\n")
	e.lock(".gitignore")
	if _, errs := e.ok("turn", "--scan", "t1"); !strings.Contains(errs, "permission denied") || !strings.Contains(errs, "no manifest") {
		t.Errorf("turn --scan with the root's .gitignore unreadable said %q; want a warning that the turn has no manifest", errs)
	}
}

// A rewind leaves an entry it may not read alone, rewinds the rest and
// says it is incomplete: one unreadable file used to fail every rewind
// while it existed.
func TestRewindLeavesUnreadableEntriesAlone(t *testing.T) {
	e := newAsUser(t)
	e.write("a.txt", "a0\n")
	e.write("was.txt", "was0\n") // readable when turn 0 opens
	e.write("locked.txt", "root's\n")
	e.lock("locked.txt")
	e.ok("scan", "on")
	e.ok("turn", "t0")
	e.write("a.txt", "a1\n")
	e.write("new.txt", "new\n")
	e.write("was.txt", "was1\n")
	e.lock("was.txt")
	e.ok("turn", "t1")

	// The rest is rewound; the path left as it is makes the rewind exit 1
	// (incomplete), naming it.
	out, errs, code := e.run("", "rewind", "0", "--scope", "code")
	if code != 1 || !strings.Contains(errs, "rewind incomplete") {
		t.Errorf("rewind 0: exit %d, stderr %q; want exit 1, incomplete", code, errs)
	}
	if got := e.read("a.txt"); got != "a0\n" {
		t.Errorf("a.txt = %q after the rewind, want a0", got)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt, created after turn 0: %v; want it deleted", err)
	}
	if got := e.read("locked.txt"); got != "root's\n" {
		t.Errorf("locked.txt = %q, want it untouched", got)
	}
	if got := e.read("was.txt"); got != "was1\n" {
		t.Errorf("was.txt, unreadable now = %q, want it untouched", got)
	}
	if !strings.Contains(out+errs, "was.txt") || !strings.Contains(out+errs, "permission denied") {
		t.Errorf("rewind said %q %q; want was.txt named as skipped", out, errs)
	}
}

// A prompt whose turn cannot open (here: the session's index is root's)
// is shown to the user as a Claude Code systemMessage; the agent's next tool call is recorded
// nowhere while the turn cannot open (and blocked with --strict), never in
// the turn before, and lands in the prompt's own turn once it can.
func TestHookWithoutItsTurnRecordsNowhereElse(t *testing.T) {
	e := newAsUser(t)
	e.write("a.txt", "a0\n")
	e.write("b.txt", "b0\n")
	e.ok("scan", "on")
	if _, errs, code := e.hook("UserPromptSubmit", map[string]any{"prompt": "first"}); code != 0 || errs != "" {
		t.Fatalf("first prompt: exit %d, %q", code, errs)
	}
	write := func(rel string) map[string]any {
		return map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": filepath.Join(e.ws, rel)}}
	}
	if _, errs, code := e.hook("PreToolUse", write("a.txt")); code != 0 || errs != "" {
		t.Fatalf("capture a.txt: exit %d, %q", code, errs)
	}
	e.write("a.txt", "a1\n")

	index := filepath.Join(e.store, "sessions", e.session, "index.db")
	if err := os.Chown(index, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(index, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := e.hook("UserPromptSubmit", map[string]any{"prompt": "second"})
	var msg struct {
		SystemMessage string `json:"systemMessage"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &msg) != nil || !strings.Contains(msg.SystemMessage, "permission denied") || !strings.Contains(msg.SystemMessage, "no checkpoint") {
		t.Errorf("second prompt: exit %d, stdout %q; want exit 0 and a systemMessage saying the prompt has no checkpoint", code, out)
	}
	if !strings.Contains(errs, "no checkpoint") {
		t.Errorf("second prompt's stderr %q, want the failure", errs)
	}
	if _, errs, code := e.hook("PreToolUse", write("b.txt"), "--strict"); code != 2 || !strings.Contains(errs, "nothing recorded") {
		t.Errorf("strict capture without the prompt's turn: exit %d, %q; want it blocked (exit 2)", code, errs)
	}
	if _, errs, code := e.hook("PreToolUse", write("b.txt")); code != 0 || !strings.Contains(errs, "nothing recorded") {
		t.Errorf("capture without the prompt's turn: exit %d, %q; want exit 0 and nothing recorded", code, errs)
	}

	// Nobody's again: the next tool call opens the second prompt's turn
	// and records into it.
	if err := os.Chown(index, int(e.uid), int(e.gid)); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(e.listing(), " "), "first:a.txt"; got != want {
		t.Errorf("turns %s, want %s: nothing recorded for the second prompt", got, want)
	}
	if _, errs, code := e.hook("PreToolUse", write("b.txt"), "--strict"); code != 0 {
		t.Fatalf("capture once the turn can open: exit %d, %q", code, errs)
	}
	if got, want := strings.Join(e.listing(), " "), "first:a.txt second:b.txt"; got != want {
		t.Errorf("turns %s, want %s", got, want)
	}
	e.write("b.txt", "b1\n")
	e.ok("rewind", "1", "--scope", "code")
	if got := e.read("b.txt"); got != "b0\n" {
		t.Errorf("b.txt = %q after rewinding the second prompt, want b0", got)
	}
	if got := e.read("a.txt"); got != "a1\n" {
		t.Errorf("a.txt = %q after rewinding the second prompt, want a1 (the first prompt's edit)", got)
	}
}
