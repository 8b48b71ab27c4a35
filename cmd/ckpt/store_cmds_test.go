//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// duBytes returns what dir takes on disk as du counts it: the 512-byte
// blocks allocated to every file under it.
func duBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			t.Skip("no block counts on this platform")
		}
		n += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// binRun runs the real binary in ws with store as CKPT_HOME.
func binRun(t testing.TB, bin, ws, store string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "CKPT_HOME="+store, "CKPT_SESSION=", "CKPT_WORKSPACE=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// TestQuotaBoundsBytesOnDisk is issue 10's defect 6: 60 turns rewriting a
// 1 MiB random file, then prune --max-bytes 20MiB and gc. The store must
// take less than 20 MiB on disk as du counts it (SQLite used to keep the
// freed pages: 60 MiB), and stay under the quota as turns go on with it in
// config.json.
func TestQuotaBoundsBytesOnDisk(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	if testing.Short() {
		t.Skip("runs the binary 150 times")
	}
	const quota = 20 << 20
	bin := ckptBinary(t)
	ws, store := t.TempDir(), t.TempDir()
	rng := rand.New(rand.NewSource(10))
	content := make([]byte, 1<<20)
	rewrite := func() {
		rng.Read(content)
		if err := os.WriteFile(filepath.Join(ws, "big.bin"), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ckpt := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := binRun(t, bin, ws, store, args...)
		if code != 0 {
			t.Fatalf("ckpt %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return stdout + stderr
	}
	rewrite()
	for i := 0; i < 60; i++ {
		ckpt("turn", "rewrite big.bin")
		ckpt("capture", "big.bin")
		rewrite()
	}
	before := duBytes(t, store)
	if before < 50<<20 {
		t.Fatalf("the store takes %d MiB before pruning; the test needs it well over the quota", before>>20)
	}
	out := ckpt("prune", "--max-bytes", "20MiB")
	ckpt("gc")
	after := duBytes(t, store)
	t.Logf("on disk: %.1f MiB before, %.1f MiB after prune --max-bytes 20MiB and gc; prune said: %s",
		float64(before)/(1<<20), float64(after)/(1<<20), strings.TrimSpace(out))
	if after >= quota {
		t.Fatalf("after prune+gc the store takes %d bytes on disk (%.1f MiB), want under the 20 MiB quota", after, float64(after)/(1<<20))
	}
	if after < 10<<20 {
		t.Errorf("the store takes %.1f MiB: retention pruned far more than the quota asks", float64(after)/(1<<20))
	}

	// Continued use with the quota in config.json: automatic retention at
	// each new turn keeps the store under it.
	if err := os.WriteFile(filepath.Join(store, "config.json"), []byte(`{"max_bytes": "20MiB"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 15; i++ {
		ckpt("turn", "more")
		ckpt("capture", "big.bin")
		rewrite()
		if used := duBytes(t, store); used >= quota {
			t.Fatalf("turn %d after the quota: the store takes %.1f MiB on disk, over 20 MiB", i, float64(used)/(1<<20))
		}
	}
	// The newest turns are still there to rewind to.
	code, _, stderr := binRun(t, bin, ws, store, "rewind", "74", "--scope", "code")
	if code != 0 {
		t.Errorf("rewind to the newest closed turn: exit %d: %s", code, stderr)
	}
}

// TestSessionsRmExitCodes checks the exit codes the CLI contract gives
// sessions rm: 1 for a refusal, 2 for a usage mistake.
func TestSessionsRmExitCodes(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"--session", "s", "turn", "a"}, {"--session", "s", "pin", "0"}} {
		if code, _, stderr := ckptRun(t, ws, store, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"sessions", "rm", "s"}, exitFail, "pinned turns (turn 0)"},
		{[]string{"sessions", "rm", "nosuch"}, exitFail, "no session nosuch"},
		{[]string{"--session", "s", "sessions", "rm"}, exitUsage, "one session ID"},
		{[]string{"sessions", "rm", "a", "b"}, exitUsage, "one session ID"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, _, stderr := ckptRun(t, ws, store, tc.args...)
			if code != tc.code || !strings.HasPrefix(stderr, "ckpt: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and one line 'ckpt: ...%s...'", code, stderr, tc.code, tc.msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(store, "sessions", "s", "index.db")); err != nil {
		t.Errorf("the refused session is gone: %v", err)
	}
}
