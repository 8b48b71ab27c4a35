package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy sits between the CLI and the S3 server on loopback and
// misbehaves on the requests its rule picks.
type faultProxy struct {
	upstream string // host:port
	mu       sync.Mutex
	rule     func(r *http.Request) fault
}

type fault struct {
	before   func()        // runs before the request is forwarded
	drop     bool          // forward, then lose the response (the server committed)
	truncate bool          // send half the response body, then cut the connection
	delay    time.Duration // wait this long before forwarding (a distant server)
}

func startProxy(t testing.TB, upstream string) (*faultProxy, string) {
	t.Helper()
	p := &faultProxy{upstream: upstream}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p, "http://" + l.Addr().String()
}

func (p *faultProxy) set(rule func(r *http.Request) fault) {
	p.mu.Lock()
	p.rule = rule
	p.mu.Unlock()
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	var f fault
	if p.rule != nil {
		f = p.rule(r)
	}
	p.mu.Unlock()
	if f.before != nil {
		f.before()
	}
	time.Sleep(f.delay)
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = "http", p.upstream, r.Host, ""
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if f.drop {
		io.Copy(io.Discard, resp.Body)
		panic(http.ErrAbortHandler)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if f.truncate {
		n, _ := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
		io.CopyN(w, resp.Body, n/2)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	io.Copy(w, resp.Body)
}

// countTurns is the number of turns `ckpt list` shows.
func countTurns(t *testing.T, r *remoteRig, store, ws string) int {
	t.Helper()
	out := r.run(store, "--workspace", ws, "list")
	return len(strings.Split(strings.TrimSpace(out), "\n")) - 1
}

// TestRemoteFaults: the S3 server dies mid-upload, ckpt sync dies between
// packs and HEAD, a response is lost after the server committed, a body is
// truncated, and two machines move one HEAD: each leaves the remote
// consistent and every pull either complete or refused.
func TestRemoteFaults(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	r := newRemoteRig(t)
	proxy, url := startProxy(t, r.srv.Addr)
	r.endpoint = url
	ws := filepath.Join(r.root, "wsA")
	os.MkdirAll(ws, 0o755)
	rng := rand.New(rand.NewPCG(7, 7))
	// 42 MiB that does not compress: three packs.
	r.run("A", "--workspace", ws, "turn", "big files")
	for i := 0; i < 6; i++ {
		b := make([]byte, 7<<20)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		p := filepath.Join(ws, fmt.Sprintf("big%d.bin", i))
		os.WriteFile(p, b, 0o644)
		r.run("A", "--workspace", ws, "capture", p)
		os.WriteFile(p, []byte("small now\n"), 0o644)
	}
	r.captureTurns("A", ws, "", 1, 4, rng)
	session := sessionOf(t, r, "A")
	remoteSessions := func() string { return r.run("Z", "sessions", "--remote") }

	t.Run("ServerKilledMidUpload", func(t *testing.T) {
		puts := 0
		proxy.set(func(req *http.Request) fault {
			if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/packs/") {
				if puts++; puts == 2 {
					return fault{before: r.srv.Kill}
				}
			}
			return fault{}
		})
		_, stderr, err := r.try("A", "sync")
		if err == nil {
			t.Fatal("sync succeeded with the server killed")
		}
		if !strings.HasPrefix(stderr, "ckpt: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("stderr is not one ckpt: line: %q", stderr)
		}
		proxy.set(nil)
		r.srv.Restart(t)
		if out := remoteSessions(); strings.Contains(out, session) {
			t.Fatalf("a failed sync published HEAD:\n%s", out)
		}
		if out := r.run("A", "sync"); !strings.Contains(out, "uploaded") {
			t.Fatalf("the next sync: %s", out)
		}
		r.run("B", "pull", session, "--workspace", filepath.Join(r.root, "wsB"))
		if out := r.run("B", "verify"); strings.Contains(strings.ToLower(out), "missing") {
			t.Fatalf("verify after pull: %s", out)
		}
		if n := countTurns(t, r, "B", filepath.Join(r.root, "wsB")); n != 5 {
			t.Fatalf("pulled %d turns, want 5", n)
		}
	})

	t.Run("SyncKilledBeforeHead", func(t *testing.T) {
		r.captureTurns("A", ws, "", 5, 3, rng)
		syncCmd := r.cmd("A", "sync")
		var once sync.Once
		proxy.set(func(req *http.Request) fault {
			if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/index-") {
				return fault{before: func() { once.Do(func() { syncCmd.Process.Kill() }) }, drop: true}
			}
			return fault{}
		})
		if err := syncCmd.Run(); err == nil {
			t.Fatal("the killed sync exited 0")
		}
		proxy.set(nil)
		wsC := filepath.Join(r.root, "wsC")
		r.run("C", "pull", session, "--workspace", wsC)
		if n := countTurns(t, r, "C", wsC); n != 5 {
			t.Fatalf("pull after a sync killed before HEAD gives %d turns, want the previous 5", n)
		}
		r.run("A", "sync")
		wsD := filepath.Join(r.root, "wsD")
		r.run("D", "pull", session, "--workspace", wsD)
		if n := countTurns(t, r, "D", wsD); n != 8 {
			t.Fatalf("pull after the next sync gives %d turns, want 8", n)
		}
	})

	t.Run("ResponseLostAfterCommit", func(t *testing.T) {
		r.captureTurns("A", ws, "", 8, 1, rng)
		dropped := false
		proxy.set(func(req *http.Request) fault {
			if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/HEAD") && !dropped {
				dropped = true
				return fault{drop: true}
			}
			return fault{}
		})
		out := r.run("A", "sync")
		proxy.set(nil)
		if !dropped {
			t.Fatal("no HEAD write went through the proxy")
		}
		if !strings.Contains(out, session+": uploaded") {
			t.Fatalf("a retried HEAD write that had committed was not taken as done: %s", out)
		}
		if list := remoteSessions(); strings.Contains(list, "fork") {
			t.Fatalf("a lost response made a fork:\n%s", list)
		}
	})

	t.Run("TruncatedBody", func(t *testing.T) {
		proxy.set(func(req *http.Request) fault {
			return fault{truncate: req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/packs/")}
		})
		_, stderr, err := r.try("E", "pull", session, "--workspace", filepath.Join(r.root, "wsE"))
		proxy.set(nil)
		if err == nil {
			t.Fatal("pull succeeded on truncated bodies")
		}
		if !strings.Contains(stderr, "corrupt") || strings.Contains(stderr, "not found") {
			t.Fatalf("a truncated body was not reported as corrupt: %q", stderr)
		}
		if out := r.run("E", "sessions"); strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Fatalf("a failed pull left a session:\n%s", out)
		}
		r.run("E", "pull", session, "--workspace", filepath.Join(r.root, "wsE"))
	})

	t.Run("ConcurrentWritersFork", func(t *testing.T) {
		wsE := filepath.Join(r.root, "wsE")
		r.captureTurns("A", ws, "", 9, 1, rng)
		r.run("A", "sync")
		if out := r.run("E", "sync"); !strings.Contains(out, ": unchanged") {
			t.Fatalf("a pulled session nobody touched was uploaded again: %s", out)
		}
		r.captureTurns("E", wsE, "", 9, 1, rng)
		out := r.run("E", "sync")
		if !strings.Contains(out, "forked") {
			t.Fatalf("a second writer did not fork: %s", out)
		}
		fork := ""
		for _, f := range strings.Fields(remoteSessions()) {
			if strings.HasPrefix(f, session+"-fork-") {
				fork = f
			}
		}
		if fork == "" {
			t.Fatalf("the fork is not listed:\n%s", remoteSessions())
		}
		wsF := filepath.Join(r.root, "wsF")
		r.run("F", "pull", fork, "--workspace", wsF)
		r.run("G", "pull", session, "--workspace", filepath.Join(r.root, "wsG"))
		if n := countTurns(t, r, "G", filepath.Join(r.root, "wsG")); n != 10 {
			t.Fatalf("A's session has %d turns on the remote, want its 10", n)
		}
		if n := countTurns(t, r, "F", wsF); n != 10 {
			t.Fatalf("the fork has %d turns, want E's 10", n)
		}
	})
}

// TestLocalCommandsNeverTouchTheRemote: with a remote configured (behind a
// proxy that counts requests), capturing, listing, rewinding and undoing
// send nothing to it; only sync does. The hot path stays on local disk.
func TestLocalCommandsNeverTouchTheRemote(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		http.Error(w, "no", http.StatusServiceUnavailable)
	})}
	go srv.Serve(l)
	defer srv.Close()
	t.Setenv("CKPT_REMOTE", "s3://bucket/prefix")
	t.Setenv("AWS_ENDPOINT_URL", "http://"+l.Addr().String())
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	ws, store := t.TempDir(), t.TempDir()
	f := filepath.Join(ws, "a.txt")
	os.WriteFile(f, []byte("one\n"), 0o644)
	for _, args := range [][]string{
		{"turn", "first"}, {"capture", f}, {"message", "assistant", "ok"}, {"turn", "second"},
		{"list"}, {"log"}, {"rewind", "0", "--force"}, {"undo", "--force"}, {"sessions"}, {"verify"},
	} {
		if code, _, stderr := ckptRun(t, ws, store, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	mu.Lock()
	n := requests
	mu.Unlock()
	if n != 0 {
		t.Fatalf("local commands sent %d requests to the remote", n)
	}
	// The counter works: sync does reach it (and fails on the 503s).
	if code, _, _ := ckptRun(t, ws, store, "sync"); code != exitFail {
		t.Fatalf("sync against a failing server exited %d", code)
	}
	mu.Lock()
	n = requests
	mu.Unlock()
	if n == 0 {
		t.Fatal("sync sent no request either: the check proves nothing")
	}
}
