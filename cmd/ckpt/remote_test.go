package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/s3test"
)

// remoteRig runs the real binary against a real S3 server (versitygw on
// loopback) with two stores on one machine, A and B, whose workspaces live
// at different paths.
type remoteRig struct {
	t        *testing.T
	bin      string
	srv      *s3test.Server
	endpoint string // where the CLI sends S3 requests (the server, or a proxy)
	root     string
}

func newRemoteRig(t *testing.T) *remoteRig {
	t.Helper()
	srv := s3test.Start(t)
	srv.Config(t, "ckpt", "")
	return &remoteRig{t: t, bin: ckptBinary(t), srv: srv, endpoint: srv.URL, root: t.TempDir()}
}

func (r *remoteRig) env() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CKPT_") && !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env, "CKPT_REMOTE=s3://ckpt/team/one", "AWS_ENDPOINT_URL="+r.endpoint,
		"AWS_ACCESS_KEY_ID="+s3test.Access, "AWS_SECRET_ACCESS_KEY="+s3test.Secret, "AWS_REGION=us-east-1")
}

// cmd returns the command ckpt --store STORE args... .
func (r *remoteRig) cmd(store string, args ...string) *exec.Cmd {
	c := exec.Command(r.bin, append([]string{"--store", filepath.Join(r.root, store)}, args...)...)
	c.Env = r.env()
	return c
}

// run runs ckpt and fails the test unless it exits 0.
func (r *remoteRig) run(store string, args ...string) string {
	r.t.Helper()
	out, errOut, err := r.try(store, args...)
	if err != nil {
		r.t.Fatalf("ckpt --store %s %s: %v\nstdout: %s\nstderr: %s", store, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (r *remoteRig) try(store string, args ...string) (string, string, error) {
	c := r.cmd(store, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), err
}

// tree reads every file under dir: path -> mode and bytes.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[filepath.ToSlash(rel)] = fmt.Sprintf("%v|%s", info.Mode().Perm(), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != w {
			diffs = append(diffs, "differs "+p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("%s: trees differ: %s", what, strings.Join(diffs, ", "))
	}
}

func copyTree(t *testing.T, dst, src string) {
	t.Helper()
	for p, v := range tree(t, src) {
		mode, body, _ := strings.Cut(v, "|")
		perm := os.FileMode(0o644)
		if strings.Contains(mode, "x") {
			perm = 0o755
		}
		full := filepath.Join(dst, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), perm); err != nil {
			t.Fatal(err)
		}
		os.Chmod(full, perm)
	}
}

// captureTurns records n turns in store's session for ws: each turn opens,
// then creates, edits or deletes a few files, capturing each first, as the
// hooks do. It returns the workspace tree at the start of every turn.
func (r *remoteRig) captureTurns(store, ws, session string, first, n int, rng *rand.Rand) []map[string]string {
	r.t.Helper()
	var starts []map[string]string
	at := []string{"--workspace", ws}
	if session != "" {
		at = append(at, "--session", session)
	}
	for i := first; i < first+n; i++ {
		r.run(store, append(at, "turn", fmt.Sprintf("prompt of turn %d", i))...)
		starts = append(starts, tree(r.t, ws))
		r.run(store, append(at, "message", "assistant", fmt.Sprintf("answer to turn %d", i))...)
		files := sortedKeys(tree(r.t, ws))
		for k := 0; k < 1+rng.IntN(4); k++ {
			var path string
			op := rng.IntN(5)
			if len(files) == 0 || op == 0 {
				path = fmt.Sprintf("dir%d/file%d-%d.txt", rng.IntN(3), i, k)
			} else {
				path = files[rng.IntN(len(files))]
			}
			full := filepath.Join(ws, filepath.FromSlash(path))
			r.run(store, append(at, "capture", full)...)
			switch {
			case op == 1 && len(files) > 3:
				os.Remove(full)
			case op == 2:
				big := make([]byte, 1<<20+rng.IntN(2<<20)) // over the inline limit: an object file
				for j := range big {
					big[j] = byte('a' + rng.IntN(4))
				}
				os.MkdirAll(filepath.Dir(full), 0o755)
				os.WriteFile(full, big, 0o644)
			default:
				os.MkdirAll(filepath.Dir(full), 0o755)
				os.WriteFile(full, []byte(fmt.Sprintf("turn %d edit %d: %x\n", i, k, rng.Uint64())), 0o644)
				if op == 3 {
					os.Chmod(full, 0o755)
				}
			}
		}
	}
	return starts
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sessionOf(t *testing.T, r *remoteRig, store string) string {
	t.Helper()
	out := r.run(store, "sessions")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one session in %s:\n%s", store, out)
	}
	return strings.Fields(lines[1])[0]
}

// TestRemoteTwoStores is the must-show: 20 turns captured in store
// A, synced to S3, pulled into store B for a workspace at another path; a
// rewind of each scope in B gives the tree and conversation A gives, and
// undo works in B.
func TestRemoteTwoStores(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	r := newRemoteRig(t)
	wsA, wsB := filepath.Join(r.root, "machineA", "project"), filepath.Join(r.root, "machineB", "src", "project")
	os.MkdirAll(wsA, 0o755)
	rng := rand.New(rand.NewPCG(16, 20))
	starts := r.captureTurns("A", wsA, "", 0, 20, rng)
	final := tree(t, wsA)
	session := sessionOf(t, r, "A")

	if out := r.run("A", "sync"); !strings.Contains(out, "uploaded") {
		t.Fatalf("sync: %s", out)
	}
	if out := r.run("A", "sync"); !strings.Contains(out, session+": unchanged") {
		t.Fatalf("a second sync with nothing new: %s", out)
	}
	if _, stderr, err := r.try("B", "verify", "--remote"); err != nil || !strings.Contains(stderr, "checked 1 remote sessions") || !strings.Contains(stderr, ": 0 findings") {
		t.Fatalf("verify --remote: %v %s", err, stderr)
	}
	if out := r.run("B", "sessions", "--remote"); !strings.Contains(out, session) || !strings.Contains(out, wsA) {
		t.Fatalf("sessions --remote does not list %s:\n%s", session, out)
	}
	out := r.run("B", "pull", session, "--workspace", wsB)
	if !strings.Contains(out, "20 turns") {
		t.Fatalf("pull: %s", out)
	}
	if local := sessionOf(t, r, "B"); local == session || !strings.HasPrefix(local, "project-") {
		t.Fatalf("the pulled session is %s locally, want wsB's own default session", local)
	}
	if _, _, err := r.try("B", "pull", session, "--workspace", wsB); err == nil {
		t.Fatal("a second pull replaced the local session")
	}
	// Machine B has the project checked out as A left it.
	copyTree(t, wsB, wsA)
	sameTree(t, "B's checkout", tree(t, wsB), final)

	// A names its session by the workspace's default; so does B, whose
	// pull made the pulled session wsB's own.
	in := func(store, ws string, args ...string) string {
		return r.run(store, append([]string{"--workspace", ws}, args...)...)
	}
	// From a subdirectory of wsB, ckpt finds the pulled session as git
	// finds its repository.
	sub := filepath.Join(wsB, "deeper", "still")
	os.MkdirAll(sub, 0o755)
	c := r.cmd("B", "list")
	c.Dir = sub
	if out, err := c.Output(); err != nil || strings.Count(string(out), "\n") != 21 {
		t.Fatalf("list from inside wsB: %v\n%s", err, out)
	}
	os.RemoveAll(filepath.Join(wsB, "deeper"))
	listA, listB := in("A", wsA, "list", "--json"), in("B", wsB, "list", "--json")
	if listA != listB {
		t.Fatalf("list differs:\nA: %s\nB: %s", listA, listB)
	}
	for _, c := range []struct {
		scope string
		turn  int
	}{{"code", 13}, {"conversation", 7}, {"both", 4}, {"code", 0}, {"both", 19}} {
		what := fmt.Sprintf("rewind %d --scope %s", c.turn, c.scope)
		if fmt.Sprint(starts[c.turn]) == fmt.Sprint(final) {
			t.Fatalf("%s: the turn's start tree equals the final one; the check would prove nothing", what)
		}
		in("A", wsA, "rewind", fmt.Sprint(c.turn), "--scope", c.scope)
		in("B", wsB, "rewind", fmt.Sprint(c.turn), "--scope", c.scope)
		gotA, gotB := tree(t, wsA), tree(t, wsB)
		sameTree(t, what+": B against A", gotB, gotA)
		if c.scope == "conversation" {
			sameTree(t, what+": B against the final tree", gotB, final)
		} else {
			sameTree(t, what+": B against the tree at the turn's start", gotB, starts[c.turn])
		}
		convA, convB := in("A", wsA, "log", "--json"), in("B", wsB, "log", "--json")
		if convA != convB {
			t.Fatalf("%s: conversations differ:\nA: %.300s\nB: %.300s", what, convA, convB)
		}
		in("B", wsB, "undo")
		in("A", wsA, "undo")
		sameTree(t, what+": B after undo", tree(t, wsB), final)
	}
	// Everything on the remote is named by the one HEAD: gc keeps it all.
	if _, stderr, err := r.try("B", "remote", "gc"); err != nil || !strings.Contains(stderr, "deleted 0 objects") || !strings.Contains(stderr, "0 unreferenced") {
		t.Fatalf("remote gc: %v %s", err, stderr)
	}
}
