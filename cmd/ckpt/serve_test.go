package main

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/ckpt/ckpt/controller"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testToken = "0123456789abcdef0123456789abcdef"

// serveFixture makes a session with three turns (a.txt created in turn 0,
// changed in turn 1) and starts the real server on loopback.
func serveFixture(t *testing.T) (ws, store, url string) {
	t.Helper()
	ws, store = t.TempDir(), t.TempDir()
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

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	app := &app{workspace: ws, store: store, stdout: io.Discard, stderr: io.Discard}
	go func() { done <- app.serve(ctx, "127.0.0.1:0", testToken, ready) }()
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not shut down")
		}
	})
	return ws, store, url
}

func call(t *testing.T, method, url, token, body string) (int, map[string]any, []any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: content type %q", method, url, ct)
	}
	var obj map[string]any
	var arr []any
	if err := json.Unmarshal(b, &obj); err != nil {
		if err := json.Unmarshal(b, &arr); err != nil {
			t.Fatalf("%s %s: not JSON: %q", method, url, b)
		}
	}
	return resp.StatusCode, obj, arr
}

func TestServeEndpoints(t *testing.T) {
	ws, _, url := serveFixture(t)
	a := filepath.Join(ws, "a.txt")

	code, _, arr := call(t, "GET", url+"/api/sessions", testToken, "")
	root, _ := filepath.EvalSymlinks(ws)
	if code != 200 || len(arr) != 1 || arr[0].(map[string]any)["id"] != controller.WorkspaceSession(root) {
		t.Fatalf("sessions: %d %v", code, arr)
	}
	code, _, arr = call(t, "GET", url+"/api/checkpoints", testToken, "")
	if code != 200 || len(arr) != 3 {
		t.Fatalf("checkpoints: %d %v", code, arr)
	}
	cp1 := arr[1].(map[string]any)
	if cp1["prompt"] != "change a" || len(cp1["files"].([]any)) != 1 {
		t.Errorf("checkpoint 1: %v", cp1)
	}
	code, _, arr = call(t, "GET", url+"/api/conversation", testToken, "")
	if code != 200 || len(arr) == 0 {
		t.Fatalf("conversation: %d %v", code, arr)
	}
	code, obj, _ := call(t, "GET", url+"/api/diff?turn=1", testToken, "")
	if code != 200 || len(obj["files"].([]any)) != 1 {
		t.Fatalf("diff: %d %v", code, obj)
	}
	code, obj, _ = call(t, "POST", url+"/api/rewind", testToken, `{"turn":1,"scope":"code","dry_run":true}`)
	if code != 200 || obj["dry_run"] != true {
		t.Fatalf("dry run: %d %v", code, obj)
	}
	if b, _ := os.ReadFile(a); string(b) != "v2\n" {
		t.Fatalf("dry run changed the file: %q", b)
	}
	code, obj, _ = call(t, "POST", url+"/api/rewind", testToken, `{"turn":1,"scope":"code"}`)
	if code != 200 || obj["changed"] != true {
		t.Fatalf("rewind: %d %v", code, obj)
	}
	if b, _ := os.ReadFile(a); string(b) != "v1\n" {
		t.Fatalf("after rewind a.txt = %q", b)
	}
	code, obj, _ = call(t, "POST", url+"/api/undo", testToken, "")
	if code != 200 {
		t.Fatalf("undo: %d %v", code, obj)
	}
	if b, _ := os.ReadFile(a); string(b) != "v2\n" {
		t.Fatalf("after undo a.txt = %q", b)
	}
	code, obj, _ = call(t, "POST", url+"/api/summarize", testToken, `{"turn":1,"direction":"up_to","text":"made a"}`)
	if code != 200 {
		t.Fatalf("summarize: %d %v", code, obj)
	}
	code, obj, _ = call(t, "POST", url+"/api/undo", testToken, `{}`)
	if code != 200 {
		t.Fatalf("undo summarize: %d %v", code, obj)
	}
	code, obj, _ = call(t, "POST", url+"/api/fork", testToken, `{"turn":1,"to":"forked"}`)
	if code != 200 || obj["session"] != "forked" || obj["prompt"] != "change a" {
		t.Fatalf("fork: %d %v", code, obj)
	}
	code, _, arr = call(t, "GET", url+"/api/sessions", testToken, "")
	if code != 200 || len(arr) != 2 {
		t.Fatalf("sessions after fork: %d %v", code, arr)
	}
	code, obj, _ = call(t, "POST", url+"/api/fork", testToken, `{"turn":1,"to":"forked"}`)
	if code != 409 {
		t.Errorf("fork to an existing session: %d %v", code, obj)
	}
}

func TestServeRefusesBadRequests(t *testing.T) {
	_, _, url := serveFixture(t)
	for _, tc := range []struct {
		method, path, token, body string
		code                      int
	}{
		{"GET", "/api/checkpoints", "", "", 401},
		{"GET", "/api/checkpoints", "wrong", "", 401},
		{"POST", "/api/rewind", "", `{"turn":0}`, 401},
		{"GET", "/api/events", "", "", 401},
		{"GET", "/api/events?token=wrong", "", "", 401},
		{"POST", "/api/rewind", testToken, `{"turn":`, 400},
		{"POST", "/api/rewind", testToken, `not json`, 400},
		{"POST", "/api/rewind", testToken, ``, 400},
		{"POST", "/api/rewind", testToken, `{"turn":1,"bogus":1}`, 400},
		{"POST", "/api/rewind", testToken, `{"scope":"code"}`, 400},
		{"POST", "/api/rewind", testToken, `{"turn":1,"scope":"all"}`, 400},
		{"POST", "/api/rewind", testToken, `{"turn":99,"scope":"code"}`, 404},
		{"GET", "/api/diff?turn=99", testToken, "", 404},
		{"GET", "/api/diff?turn=x", testToken, "", 400},
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
	} {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s %s %.40q: %d, want %d (%s)", tc.method, tc.path, tc.body, resp.StatusCode, tc.code, b)
			continue
		}
		var e struct{ Error string }
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s %s: body %q is not a JSON error", tc.method, tc.path, b)
		}
	}
}

// TestServeEventsSeeOtherClients: a rewind by the CLI, another client of
// the same session, reaches the SSE stream.
func TestServeEventsSeeOtherClients(t *testing.T) {
	ws, store, url := serveFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/events?token="+testToken, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(d), &m) == nil {
					events <- m
				}
			}
		}
		close(events)
	}()
	time.Sleep(2 * servePoll) // let the stream take its first fingerprint

	if code, _, stderr := ckptRun(t, ws, store, "rewind", "1", "--scope", "code"); code != 0 {
		t.Fatalf("CLI rewind: exit %d: %s", code, stderr)
	}
	select {
	case e, ok := <-events:
		if !ok || e["kind"] != "changed" {
			t.Fatalf("event %v (open %v), want changed", e, ok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s of a rewind by another client")
	}
	// And the server's own changes arrive as controller events.
	for len(events) > 0 {
		<-events
	}
	time.Sleep(2 * servePoll)
	code, obj, _ := call(t, "POST", url+"/api/undo", testToken, "")
	if code != 200 {
		t.Fatalf("undo: %d %v", code, obj)
	}
	select {
	case e := <-events:
		if e["kind"] != "undone" {
			t.Errorf("event %v, want undone", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event after undo through the server")
	}
}

func TestServeTokenFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(f, []byte(" secret \n"), 0o600)
	if tok, err := serveToken(f); err != nil || tok != "secret" {
		t.Errorf("token file: %q %v", tok, err)
	}
	tok, err := serveToken("")
	if err != nil || len(tok) != 32 {
		t.Errorf("random token %q %v", tok, err)
	}
	if _, err := serveToken(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing token file accepted")
	}
}
