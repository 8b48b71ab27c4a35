package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/token"
)

const testToken = "0123456789abcdef0123456789abcdef"

// syncBuffer is a bytes.Buffer safe to read while serve writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type served struct {
	ws, store, url string
	stdout, stderr *syncBuffer
}

// serveFixture makes a session with three turns (a.txt created in turn 0,
// changed in turn 1) and starts the real server with o.
func serveFixture(t *testing.T, o serveOptions) served {
	t.Helper()
	ws, store := t.TempDir(), t.TempDir()
	a := filepath.Join(ws, "a.txt")
	must := func(args ...string) {
		t.Helper()
		if code, _, stderr := ckptRun(t, ws, store, args...); code != 0 {
			t.Fatalf("ckpt %v: exit %d: %s", args, code, stderr)
		}
	}
	must("turn", "make a")
	must("capture", a)
	os.WriteFile(a, []byte("v1\n"), 0o644)
	must("message", "assistant", "made a")
	must("turn", "change a")
	must("capture", a)
	os.WriteFile(a, []byte("v2\n"), 0o644)
	must("turn", "third")
	return startServe(t, ws, store, o)
}

// startServe starts the real server with o on the workspace's session.
func startServe(t *testing.T, ws, store string, o serveOptions) served {
	t.Helper()
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	if o.token == "" {
		o.token = testToken
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	s := served{ws: ws, store: store, stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	app := &app{workspace: ws, store: store, stdout: s.stdout, stderr: s.stderr}
	go func() { done <- app.serve(ctx, o, ready) }()
	select {
	case s.url = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(2 * time.Minute): // a hang guard, generous for a loaded machine
		t.Fatal("server did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(2 * time.Minute):
			t.Error("server did not shut down")
		}
	})
	return s
}

// withLimits changes the server's timeouts for one test.
func withLimits(t *testing.T, change func()) {
	saved := serveLimits
	change()
	t.Cleanup(func() { serveLimits = saved })
}

// testClient's timeout stops a hung request, generous for a loaded machine.
var testClient = &http.Client{Timeout: 2 * time.Minute}

// call sends one request; hdr holds extra headers ("Host" sets the Host).
func call(t *testing.T, method, url, token, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeLineAndMessages: the one stdout line has the URL, the token and
// a ready-to-open page URL; stderr never shows the token.
func TestServeLineAndMessages(t *testing.T) {
	s := serveFixture(t, serveOptions{})
	var line struct{ URL, Token, OpenURL string }
	lines := strings.Split(strings.TrimSpace(s.stdout.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("stdout %q, want one line", s.stdout.String())
	}
	if err := json.Unmarshal([]byte(lines[0]), &struct {
		URL     *string `json:"url"`
		Token   *string `json:"token"`
		OpenURL *string `json:"open_url"`
	}{&line.URL, &line.Token, &line.OpenURL}); err != nil {
		t.Fatal(err)
	}
	if line.URL != s.url || line.Token != testToken || line.OpenURL != s.url+"/#token="+testToken {
		t.Errorf("stdout line %s", lines[0])
	}
	if strings.Contains(s.stderr.String(), testToken) {
		t.Errorf("stderr shows the token: %q", s.stderr.String())
	}
	if !strings.Contains(s.stderr.String(), s.url) {
		t.Errorf("stderr %q does not say where it serves", s.stderr.String())
	}
	if code, body := call(t, "GET", s.url+"/api/checkpoints", testToken, ""); code != 200 || !strings.Contains(body, "change a") {
		t.Errorf("checkpoints: %d %s", code, body)
	}
	if code, _ := call(t, "GET", s.url+"/api/checkpoints", "", ""); code != 401 {
		t.Errorf("checkpoints without a token: %d", code)
	}
	if code, _ := call(t, "GET", s.url+"/", "", ""); code != 200 {
		t.Errorf("page: %d", code)
	}
}

// TestServeRefusesAddresses: a non-loopback --addr, or one that is not
// HOST:PORT, is a usage error (exit 2) before anything listens.
func TestServeRefusesAddresses(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", ":8080", "192.168.1.10:0", "10.0.0.1:8080", "example.com:80",
		"8080", "localhost", "127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:99999", "[::1]"} {
		code, stdout, stderr := ckptRun(t, ws, store, "serve", "--addr", addr)
		if code != exitUsage {
			t.Errorf("--addr %s: exit %d, want %d (%s)", addr, code, exitUsage, stderr)
		}
		if stdout != "" || !strings.HasPrefix(stderr, "ckpt: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("--addr %s: stdout %q stderr %q", addr, stdout, stderr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:8080", "LOCALHOST:1"} {
		if err := checkAddr(addr, false); err != nil {
			t.Errorf("--addr %s refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.168.1.10:0"} {
		if err := checkAddr(addr, true); err != nil {
			t.Errorf("--addr %s --allow-remote refused: %v", addr, err)
		}
	}
	if err := checkAddr("8080", true); err == nil {
		t.Error("--addr 8080 --allow-remote accepted")
	}
}

// TestServeAllowRemote: --allow-remote listens beyond loopback with a
// warning, and only with a strong token.
func TestServeAllowRemote(t *testing.T) {
	s := serveFixture(t, serveOptions{addr: "0.0.0.0:0", allowRemote: true})
	if !strings.Contains(s.stderr.String(), "warning: --allow-remote") {
		t.Errorf("no warning on stderr: %q", s.stderr.String())
	}
	if strings.Contains(s.stderr.String(), testToken) {
		t.Errorf("stderr shows the token: %q", s.stderr.String())
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("url %s on every interface: want a loopback address to open", s.url)
	}
	url := s.url
	if code, body := call(t, "GET", url+"/api/checkpoints", testToken, ""); code != 200 {
		t.Errorf("checkpoints over 127.0.0.1: %d %s", code, body)
	}
	if code, _ := call(t, "GET", url+"/api/checkpoints", testToken, "", "Host", "evil.example:"+port); code != 403 {
		t.Errorf("foreign Host with --allow-remote: %d", code)
	}

	a := &app{workspace: t.TempDir(), store: t.TempDir(), stdout: io.Discard, stderr: io.Discard}
	err := a.serve(context.Background(), serveOptions{addr: "0.0.0.0:0", allowRemote: true, token: "short-token"}, nil)
	var usage usageError
	if !errors.As(err, &usage) {
		t.Errorf("--allow-remote with a weak token: %v, want a usage error", err)
	}
}

func TestServeTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, content, want string
	}{
		{"hex32", " " + testToken + " \n", testToken},
		{"b64", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA"},
		{"hex31", testToken[:31], ""},
		{"secret", "secret", ""},
		{"digits", "1234567890123456789012345678901", ""}, // 31 digits: 103 bits
		{"same", strings.Repeat("a", 64), ""},
		{"space", "0123456789abcdef 0123456789abcdef0", ""},
		{"empty", "\n", ""},
	} {
		p := write(tc.name, tc.content)
		tok, err := serveToken(p)
		if tc.want == "" {
			var usage usageError
			if !errors.As(err, &usage) {
				t.Errorf("%s: token %q, err %v; want a usage error", tc.name, tok, err)
			}
			continue
		}
		if err != nil || tok != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.name, tok, err, tc.want)
		}
	}
	tok, err := serveToken("")
	if err != nil || len(tok) != 32 || token.Bits(tok) < token.MinBits {
		t.Errorf("random token %q %v", tok, err)
	}
	if _, err := serveToken(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing token file accepted")
	}
	// Through the CLI: a short token file is exit 2, and the token is not echoed.
	ws, store := t.TempDir(), t.TempDir()
	code, stdout, stderr := ckptRun(t, ws, store, "serve", "--token-file", write("weak", "hunter2hunter2"))
	if code != exitUsage || stdout != "" || strings.Contains(stderr, "hunter2") {
		t.Errorf("weak token file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestServeHostAndOrigin: the real server refuses a rebound Host and a
// cross-origin rewind, and serves its own.
func TestServeHostAndOrigin(t *testing.T) {
	s := serveFixture(t, serveOptions{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
	rewind := `{"turn":1,"scope":"code"}`
	if code, body := call(t, "POST", s.url+"/api/rewind", testToken, rewind, "Host", "rebind.example:"+port); code != 403 {
		t.Errorf("rebound Host: %d %s", code, body)
	}
	if code, body := call(t, "POST", s.url+"/api/rewind", testToken, rewind, "Origin", "http://evil.example"); code != 403 {
		t.Errorf("cross-origin rewind: %d %s", code, body)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(b) != "v2\n" {
		t.Fatalf("a refused request changed a.txt: %q", b)
	}
	if code, body := call(t, "POST", s.url+"/api/rewind", testToken, rewind, "Origin", s.url, "Host", "127.0.0.1:"+port); code != 200 {
		t.Errorf("same-origin rewind: %d %s", code, body)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(b) != "v1\n" {
		t.Errorf("a.txt after the same-origin rewind: %q", b)
	}
}

// rawConn opens a TCP connection to the server and reads what it answers,
// if anything, on a channel that closes when the server closes the
// connection.
func rawConn(t *testing.T, url string) (net.Conn, <-chan string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		r := bufio.NewReader(conn)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	return conn, lines
}

// TestServeTrickledPostCutOff: a POST whose body trickles in a byte at a
// time is cut off by the read timeout, before the body is complete.
func TestServeTrickledPostCutOff(t *testing.T) {
	withLimits(t, func() { serveLimits.Read = 500 * time.Millisecond })
	s := serveFixture(t, serveOptions{})
	body := `{"turn":1,"scope":"code"}` + strings.Repeat(" ", 300)
	conn, lines := rawConn(t, s.url)
	host := strings.TrimPrefix(s.url, "http://")
	fmt.Fprintf(conn, "POST /api/rewind HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", host, testToken, len(body))
	sent, status := 0, ""
trickle:
	for ; sent < len(body); sent++ {
		select {
		case l, ok := <-lines:
			status = l
			if !ok {
				status = "(closed)"
			}
			break trickle
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := conn.Write([]byte{body[sent]}); err != nil {
			status = "(write failed)"
			break
		}
	}
	if sent == len(body) {
		t.Fatalf("the server read the whole trickled body (%d bytes over %v)", sent, time.Duration(sent)*50*time.Millisecond)
	}
	if strings.HasPrefix(status, "HTTP/") && !strings.HasPrefix(status, "HTTP/1.1 408") {
		t.Errorf("answer to a trickled body: %q", status)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "a.txt")); string(b) != "v2\n" {
		t.Errorf("a.txt = %q after a cut-off rewind", b)
	}
}

// TestServeSlowHeadersCutOff: headers that never finish are cut off by the
// header timeout.
func TestServeSlowHeadersCutOff(t *testing.T) {
	withLimits(t, func() { serveLimits.ReadHeader = 300 * time.Millisecond })
	s := serveFixture(t, serveOptions{})
	conn, lines := rawConn(t, s.url)
	fmt.Fprintf(conn, "GET /api/checkpoints HTTP/1.1\r\nHost: %s\r\n", strings.TrimPrefix(s.url, "http://"))
	for i := 0; ; i++ {
		select {
		case _, ok := <-lines:
			if !ok {
				return // closed: cut off
			}
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := fmt.Fprintf(conn, "X-Slow-%d: 1\r\n", i); err != nil {
			return
		}
		if i > 400 {
			t.Fatal("the server kept reading headers for 20s")
		}
	}
}

// TestServeIdleConnectionClosed: a kept-alive connection left idle is
// closed by the idle timeout.
func TestServeIdleConnectionClosed(t *testing.T) {
	withLimits(t, func() { serveLimits.Idle = 300 * time.Millisecond })
	s := serveFixture(t, serveOptions{})
	conn, lines := rawConn(t, s.url)
	fmt.Fprintf(conn, "GET /style.css HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(s.url, "http://"))
	if l := <-lines; !strings.HasPrefix(l, "HTTP/1.1 200") {
		t.Fatalf("status %q", l)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return // closed by the server
			}
		case <-deadline:
			t.Fatal("an idle connection stayed open 20s")
		}
	}
}

// TestServeEventStreamOutlivesTimeouts: the event stream is not cut by the
// read and write timeouts, and reports a change by another process (the
// CLI) made after they passed.
func TestServeEventStreamOutlivesTimeouts(t *testing.T) {
	// The stream's request must arrive within Read of its connection: a
	// second, not less, or a loaded machine's scheduling between the
	// client's dial and its write is cut off as a slow client.
	withLimits(t, func() {
		serveLimits.Read = time.Second
		serveLimits.Write = time.Second
		serveLimits.Poll = 20 * time.Millisecond
	})
	s := serveFixture(t, serveOptions{})
	// The stream lives through a CLI process's start and rewind: on a
	// loaded machine, seconds each.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
	}()
	time.Sleep(2 * serveLimits.Read) // past both timeouts
	if code, _, stderr := ckptRun(t, s.ws, s.store, "rewind", "1", "--scope", "code"); code != 0 {
		t.Fatalf("CLI rewind: exit %d: %s", code, stderr)
	}
	select {
	case d, ok := <-events:
		if !ok || !strings.Contains(d, `"kind":"rewound"`) {
			t.Fatalf("event %q (open %v), want rewound", d, ok)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no event within 2 minutes of a rewind by another process")
	}
}
