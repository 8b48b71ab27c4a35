package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
	"github.com/gofrs/flock"
)

const testToken = "0123456789abcdef0123456789abcdef"

// session makes a session with three turns: a.txt created in turn 0 (v1),
// changed in turn 1 (v2), and an open turn 2.
func session(t testing.TB) (ws, store string, c *controller.Controller) {
	t.Helper()
	ws, store = t.TempDir(), t.TempDir()
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := filepath.Join(ws, "a.txt")
	step := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.BeginTurn(ctx, "make a", controller.TurnOptions{})
	step(err)
	_, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{a}})
	err = errs[0]
	step(err)
	step(os.WriteFile(a, []byte("v1\n"), 0o644))
	_, err = c.AppendMessage(ctx, "assistant", "made a")
	step(err)
	_, err = c.BeginTurn(ctx, "change a", controller.TurnOptions{})
	step(err)
	_, errs = c.Capture(ctx, controller.CaptureOptions{Paths: []string{a}})
	err = errs[0]
	step(err)
	step(os.WriteFile(a, []byte("v2\n"), 0o644))
	_, err = c.BeginTurn(ctx, "third", controller.TurnOptions{})
	step(err)
	return ws, store, c
}

// serve starts a real HTTP server on 127.0.0.1 with the handler.
func serve(t testing.TB, c *controller.Controller, o httpapi.Options) string {
	t.Helper()
	if o.Token == "" {
		o.Token = testToken
	}
	srv := httptest.NewServer(httpapi.NewHandler(c, o))
	t.Cleanup(srv.Close)
	return srv.URL
}

// patience bounds every wait in these tests (a call, an event, a page
// element) so that a hang fails with a message instead of at the package
// timeout. It is a safety net, not a verdict: long enough that no correct
// run on a loaded machine comes near it.
const patience = 2 * time.Minute

// client bounds a call, so a stream answered where a refusal was due
// fails the test instead of hanging it.
var client = &http.Client{Timeout: patience}

type reply struct {
	code int
	obj  map[string]any
	arr  []any
	raw  string
}

// call sends one request; hdr holds extra headers ("Host" sets the Host).
func call(t testing.TB, method, url, token, body string, hdr ...string) reply {
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
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode, raw: string(b)}
	if strings.HasPrefix(url[strings.Index(url[7:], "/")+7:], "/api") {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: content type %q", method, url, ct)
		}
		if json.Unmarshal(b, &r.obj) != nil && json.Unmarshal(b, &r.arr) != nil {
			t.Fatalf("%s %s: not JSON: %q", method, url, b)
		}
	}
	return r
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	ws, _, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true})
	a := filepath.Join(ws, "a.txt")

	r := call(t, "GET", url+"/api/sessions", testToken, "")
	if r.code != 200 || len(r.arr) != 1 || r.arr[0].(map[string]any)["id"] != c.Session() {
		t.Fatalf("sessions: %d %s", r.code, r.raw)
	}
	r = call(t, "GET", url+"/api/checkpoints", testToken, "")
	if r.code != 200 || len(r.arr) != 3 {
		t.Fatalf("checkpoints: %d %s", r.code, r.raw)
	}
	cp1 := r.arr[1].(map[string]any)
	if cp1["prompt"] != "change a" || len(cp1["files"].([]any)) != 1 {
		t.Errorf("checkpoint 1: %v", cp1)
	}
	r = call(t, "GET", url+"/api/conversation", testToken, "")
	if r.code != 200 || len(r.arr) != 4 { // three prompts and one assistant message
		t.Fatalf("conversation: %d %s", r.code, r.raw)
	}
	r = call(t, "GET", url+"/api/diff?turn=1", testToken, "")
	if r.code != 200 || len(r.obj["files"].([]any)) != 1 {
		t.Fatalf("diff: %d %s", r.code, r.raw)
	}
	r = call(t, "POST", url+"/api/rewind", testToken, `{"turn":1,"scope":"code","dry_run":true}`)
	if r.code != 200 || r.obj["dry_run"] != true {
		t.Fatalf("dry run: %d %s", r.code, r.raw)
	}
	if got := readFile(t, a); got != "v2\n" {
		t.Fatalf("dry run changed the file: %q", got)
	}
	r = call(t, "POST", url+"/api/rewind", testToken, `{"turn":1,"scope":"code"}`)
	if r.code != 200 || r.obj["changed"] != true {
		t.Fatalf("rewind: %d %s", r.code, r.raw)
	}
	if got := readFile(t, a); got != "v1\n" {
		t.Fatalf("after rewind a.txt = %q", got)
	}
	r = call(t, "POST", url+"/api/undo", testToken, "")
	if r.code != 200 {
		t.Fatalf("undo: %d %s", r.code, r.raw)
	}
	if got := readFile(t, a); got != "v2\n" {
		t.Fatalf("after undo a.txt = %q", got)
	}
	r = call(t, "POST", url+"/api/summarize", testToken, `{"turn":1,"direction":"up_to","text":"made a"}`)
	if r.code != 200 {
		t.Fatalf("summarize: %d %s", r.code, r.raw)
	}
	r = call(t, "POST", url+"/api/undo", testToken, `{}`)
	if r.code != 200 {
		t.Fatalf("undo summarize: %d %s", r.code, r.raw)
	}
	r = call(t, "POST", url+"/api/fork", testToken, `{"turn":1,"to":"forked"}`)
	if r.code != 200 || r.obj["session"] != "forked" || r.obj["prompt"] != "change a" || r.obj["from"] != c.Session() {
		t.Fatalf("fork: %d %s", r.code, r.raw)
	}
	r = call(t, "GET", url+"/api/sessions", testToken, "")
	if r.code != 200 || len(r.arr) != 2 {
		t.Fatalf("sessions after fork: %d %s", r.code, r.raw)
	}
	r = call(t, "POST", url+"/api/fork", testToken, `{"turn":1,"to":"forked"}`)
	if r.code != 409 {
		t.Errorf("fork to an existing session: %d %s", r.code, r.raw)
	}
}

func TestSessionsNeedsStore(t *testing.T) {
	t.Parallel()
	_, _, c := session(t)
	url := serve(t, c, httpapi.Options{})
	if r := call(t, "GET", url+"/api/sessions", testToken, ""); r.code != 404 {
		t.Errorf("sessions without Options.Sessions: %d %s", r.code, r.raw)
	}
}

func TestRefusesBadRequests(t *testing.T) {
	t.Parallel()
	_, _, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true})
	for _, tc := range []struct {
		method, path, token, body string
		code                      int
	}{
		{"GET", "/api/checkpoints", "", "", 401},
		{"GET", "/api/checkpoints", "wrong", "", 401},
		{"GET", "/api/checkpoints?token=" + testToken, "", "", 401},
		{"POST", "/api/rewind", "", `{"turn":0}`, 401},
		{"GET", "/api/events", "", "", 401},
		{"GET", "/api/events?token=" + testToken, "", "", 401}, // never in a URL
		{"POST", "/api/rewind", testToken, `{"turn":`, 400},
		{"POST", "/api/rewind", testToken, `not json`, 400},
		{"POST", "/api/rewind", testToken, ``, 400},
		{"POST", "/api/rewind", testToken, `{"turn":1} {}`, 400},
		{"POST", "/api/rewind", testToken, `{"turn":1,"bogus":1}`, 400},
		{"POST", "/api/rewind", testToken, `{"scope":"code"}`, 400},
		{"POST", "/api/rewind", testToken, `{"turn":-1}`, 400},
		{"POST", "/api/rewind", testToken, `{"turn":1,"scope":"all"}`, 400},
		{"POST", "/api/rewind", testToken, `{"turn":99,"scope":"code"}`, 404},
		{"GET", "/api/diff?turn=99", testToken, "", 404},
		{"GET", "/api/diff?turn=x", testToken, "", 400},
		{"GET", "/api/diff?turn=01", testToken, "", 400},
		{"GET", "/api/diff?turn=99999999999999999999", testToken, "", 400},
		{"POST", "/api/fork", testToken, `{"turn":99}`, 404},
		{"POST", "/api/fork", testToken, `{"turn":1,"to":"../evil"}`, 400},
		{"POST", "/api/summarize", testToken, `{"turn":1,"direction":"sideways","text":"x"}`, 400},
		{"POST", "/api/summarize", testToken, `{"turn":1,"direction":"from","text":""}`, 400},
		{"POST", "/api/summarize", testToken, `{"turn":99,"direction":"from","text":"x"}`, 404},
		{"POST", "/api/undo", testToken, `{`, 400},
		{"POST", "/api/undo", testToken, ``, 409}, // nothing to undo
		{"POST", "/api/rewind", testToken, `{"turn":1,"scope":"code","pad":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
		{"POST", "/api/undo", testToken, strings.Repeat(" ", 2<<20), 413},
		{"GET", "/api/nope", testToken, "", 404},
		{"DELETE", "/api/checkpoints", testToken, "", 404},
		{"PUT", "/index.html", testToken, "x", 404},
	} {
		r := call(t, tc.method, url+tc.path, tc.token, tc.body)
		if r.code != tc.code {
			t.Errorf("%s %s %.40q: %d, want %d (%s)", tc.method, tc.path, tc.body, r.code, tc.code, r.raw)
			continue
		}
		var e struct{ Error string }
		if json.Unmarshal([]byte(r.raw), &e) != nil || e.Error == "" {
			t.Errorf("%s %s: body %q is not a JSON error", tc.method, tc.path, r.raw)
		}
	}
}

// TestHostAndOrigin: a request naming another host (a DNS-rebound page)
// or coming from another origin never reaches the controller.
func TestHostAndOrigin(t *testing.T) {
	t.Parallel()
	ws, _, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true})
	a := filepath.Join(ws, "a.txt")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	own := "http://127.0.0.1:" + port
	rewind := `{"turn":1,"scope":"code"}`
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		code                     int
	}{
		{"rebound name", "GET", "/api/checkpoints", "", []string{"Host", "evil.example:" + port}, 403},
		{"rebound name, no port", "GET", "/api/checkpoints", "", []string{"Host", "evil.example"}, 403},
		{"rebound name, page", "GET", "/", "", []string{"Host", "evil.example:" + port}, 403},
		{"rebound name, rewind", "POST", "/api/rewind", rewind, []string{"Host", "evil.example:" + port}, 403},
		{"other port", "GET", "/api/checkpoints", "", []string{"Host", "127.0.0.1:1"}, 403},
		{"loopback, no port", "GET", "/api/checkpoints", "", []string{"Host", "127.0.0.1"}, 403},
		{"other loopback IP", "GET", "/api/checkpoints", "", []string{"Host", "127.0.0.2:" + port}, 403},
		{"localhost.evil", "GET", "/api/checkpoints", "", []string{"Host", "localhost.evil.example:" + port}, 403},
		{"own IP", "GET", "/api/checkpoints", "", nil, 200},
		{"localhost", "GET", "/api/checkpoints", "", []string{"Host", "localhost:" + port}, 200},
		{"LOCALHOST", "GET", "/api/checkpoints", "", []string{"Host", "LOCALHOST:" + port}, 200},
		{"foreign origin, rewind", "POST", "/api/rewind", rewind, []string{"Origin", "http://evil.example"}, 403},
		{"foreign port origin, rewind", "POST", "/api/rewind", rewind, []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"null origin, undo", "POST", "/api/undo", "", []string{"Origin", "null"}, 403},
		{"foreign origin, read", "GET", "/api/checkpoints", "", []string{"Origin", "http://evil.example"}, 403},
		{"foreign origin, events", "GET", "/api/events", "", []string{"Origin", "http://evil.example"}, 403},
		{"foreign origin, page", "GET", "/", "", []string{"Origin", "http://evil.example"}, 200},
		{"own origin, dry run", "POST", "/api/rewind", `{"turn":1,"scope":"code","dry_run":true}`, []string{"Origin", own}, 200},
		{"localhost origin", "POST", "/api/rewind", `{"turn":1,"scope":"code","dry_run":true}`, []string{"Host", "localhost:" + port, "Origin", "http://localhost:" + port}, 200},
		{"origin of the other name", "POST", "/api/rewind", rewind, []string{"Host", "localhost:" + port, "Origin", own}, 403},
	} {
		r := call(t, tc.method, url+tc.path, testToken, tc.body, tc.hdr...)
		if r.code != tc.code {
			t.Errorf("%s: %d, want %d (%s)", tc.name, r.code, tc.code, r.raw)
		}
	}
	if got := readFile(t, a); got != "v2\n" {
		t.Errorf("a refused request rewound a.txt: %q", got)
	}
}

// TestHostsAndOriginsOptions: an embedder behind a proxy names its host
// and origin.
func TestHostsAndOriginsOptions(t *testing.T) {
	t.Parallel()
	_, _, c := session(t)
	url := serve(t, c, httpapi.Options{Hosts: []string{"ckpt.example:8443", "app.internal"}, Origins: []string{"https://ui.example/"}})
	for _, tc := range []struct {
		hdr  []string
		code int
	}{
		{[]string{"Host", "ckpt.example:8443"}, 200},
		{[]string{"Host", "ckpt.example:1"}, 403},
		{[]string{"Host", "app.internal:99"}, 200},
		{[]string{"Host", "app.internal"}, 200},
		{[]string{"Origin", "https://ui.example"}, 200},
		{[]string{"Origin", "https://ui.example.evil"}, 403},
	} {
		if r := call(t, "POST", url+"/api/rewind", testToken, `{"turn":1,"dry_run":true}`, tc.hdr...); r.code != tc.code {
			t.Errorf("%v: %d, want %d (%s)", tc.hdr, r.code, tc.code, r.raw)
		}
	}
}

// TestTrickledBodyCutOff: a client sending its body a byte at a time is cut
// off after BodyTimeout, before it finishes, with nothing changed.
func TestTrickledBodyCutOff(t *testing.T) {
	t.Parallel()
	ws, _, c := session(t)
	url := serve(t, c, httpapi.Options{BodyTimeout: 300 * time.Millisecond})
	body := `{"turn":1,"scope":"code"}` + strings.Repeat(" ", 2400) // 2 min at the gap: the server cuts it off long before
	got := trickle(t, strings.TrimPrefix(url, "http://"), body, 50*time.Millisecond)
	if got.sent >= len(body) {
		t.Fatalf("the whole trickled body (%d bytes) was read; response %q", got.sent, got.resp)
	}
	if got.resp != "" && !strings.HasPrefix(got.resp, "HTTP/1.1 408") {
		t.Errorf("response to a trickled body: %q", got.resp)
	}
	if b := readFile(t, filepath.Join(ws, "a.txt")); b != "v2\n" {
		t.Errorf("a.txt = %q after a cut-off rewind", b)
	}
}

type trickled struct {
	sent int    // body bytes written before the server cut the connection off
	resp string // the status line the server sent, if any
}

// trickle opens a raw TCP connection, sends a POST /api/rewind's headers
// and then its body one byte every gap, until the server answers or closes.
func trickle(t *testing.T, addr, body string, gap time.Duration) trickled {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/rewind HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, testToken, len(body))
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		answered <- strings.TrimSpace(line)
	}()
	for i := 0; i < len(body); i++ {
		select {
		case resp := <-answered:
			return trickled{sent: i, resp: resp}
		case <-time.After(gap):
		}
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			return trickled{sent: i}
		}
	}
	return trickled{sent: len(body), resp: <-answered}
}

// TestEventsStream: the stream needs the token in a header and carries,
// in commit order, the handler's own changes and other processes' changes
// (another Controller on the same session) as the events they are.
func TestEventsStream(t *testing.T) {
	t.Parallel()
	ws, store, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true, PollInterval: 20 * time.Millisecond})
	events := stream(t, url)

	other, err := controller.Open(context.Background(), controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, errs := other.Capture(context.Background(), controller.CaptureOptions{Paths: []string{"b.txt"}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if _, err := other.Rewind(context.Background(), controller.Target{Turn: 1}, "code", controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := call(t, "POST", url+"/api/undo", testToken, ""); r.code != 200 {
		t.Fatalf("undo: %d %s", r.code, r.raw)
	}
	var got []string
	var last float64
	for _, want := range []string{"captured b.txt", "rewound ", "undone "} {
		e := next(t, events)
		if e["session"] != c.Session() {
			t.Errorf("event %v: session %v, want %s", e, e["session"], c.Session())
		}
		seq, _ := e["seq"].(float64)
		if seq <= last {
			t.Errorf("event %v: seq %v after %v", e, seq, last)
		}
		last = seq
		path, _ := e["path"].(string)
		got = append(got, fmt.Sprint(e["kind"], " ", path))
		if got[len(got)-1] != want {
			t.Fatalf("events %q, want %q next", got, want)
		}
	}
}

// stream opens /api/events with the token in the header and returns its
// decoded data lines.
func stream(t *testing.T, url string) <-chan map[string]any {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan map[string]any, 16)
	opened := make(chan bool)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == ": ckpt events" {
				close(opened)
			}
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(d), &m) == nil {
					events <- m
				}
			}
		}
	}()
	select {
	case <-opened:
	case <-time.After(patience):
		t.Fatal("the stream sent no opening comment")
	}
	return events
}

func next(t *testing.T, events <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("event stream closed")
		}
		return e
	case <-time.After(patience):
		t.Fatalf("no event within %v", patience)
	}
	return nil
}

// TestPageServedWithoutAuth: the page needs no token; the API does.
func TestPageServedWithoutAuth(t *testing.T) {
	t.Parallel()
	_, _, c := session(t)
	url := serve(t, c, httpapi.Options{})
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		r := call(t, "GET", url+p, "", "")
		if r.code != 200 || len(r.raw) == 0 {
			t.Errorf("GET %s: %d", p, r.code)
		}
	}
	if r := call(t, "GET", url+"/api/checkpoints", "", ""); r.code != http.StatusUnauthorized {
		t.Errorf("API without token: %d", r.code)
	}
}

// TestWorkOutlivesReadTimeout: a rewind that waits past the server's read
// timeout and the body timeout (here for the session's lock, held by
// "another process") still completes. net/http lifts the read deadline once
// the body is read; a read deadline set after that would cancel the
// request's context when it passed.
func TestWorkOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	ws, store, c := session(t)
	// The request itself must arrive within limit of the connection: a
	// second, not less, or a loaded machine's scheduling between the
	// client's dial and its write is cut off as a slow client.
	const limit = time.Second
	srv := httptest.NewUnstartedServer(httpapi.NewHandler(c, httpapi.Options{Token: testToken, Sessions: true, BodyTimeout: limit}))
	srv.Config.ReadTimeout = limit
	srv.Start()
	t.Cleanup(srv.Close)

	lock := flock.New(filepath.Join(store, "sessions", c.Session(), "ops.lock")) // as another process holds it
	if err := lock.Lock(); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(3 * limit) // past both timeouts
		lock.Unlock()
	}()
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/api/rewind", `{"turn":1,"scope":"code"}`},
		{"GET", "/api/checkpoints", ""}, // after the rewind: nothing to wait for, but a read deadline set
	} {
		if r := call(t, tc.method, srv.URL+tc.path, testToken, tc.body); r.code != 200 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, r.code, r.raw)
		}
	}
	<-released
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "v1\n" {
		t.Errorf("a.txt after a rewind that waited for the lock: %q", got)
	}
}

// TestHostIPv6: on [::1] the Host must be [::1]:PORT or localhost:PORT.
func TestHostIPv6(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	_, _, c := session(t)
	srv := httptest.NewUnstartedServer(httpapi.NewHandler(c, httpapi.Options{Token: testToken}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tc := range []struct {
		host string
		code int
	}{
		{"[::1]:" + port, 200},
		{"localhost:" + port, 200},
		{"127.0.0.1:" + port, 403}, // not the address it arrived on
		{"[::1]:1", 403},
		{"[::ffff:7f00:1]:" + port, 403},
		{"evil.example:" + port, 403},
	} {
		if r := call(t, "GET", srv.URL+"/api/checkpoints", testToken, "", "Host", tc.host); r.code != tc.code {
			t.Errorf("Host %s: %d, want %d (%s)", tc.host, r.code, tc.code, r.raw)
		}
	}
}
