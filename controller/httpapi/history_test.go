package httpapi_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller/httpapi"
)

// TestServeUndoRedoHistory drives undo (dry run, conflict, forced), history
// and redo over HTTP: the hand edit a forced undo overwrote comes back.
func TestServeUndoRedoHistory(t *testing.T) {
	t.Parallel()
	ws, _, c := session(t)
	url := serve(t, c, httpapi.Options{})
	call := func(t *testing.T, method, url, token, body string) (int, map[string]any, []any) {
		t.Helper()
		r := call(t, method, url, token, body)
		return r.code, r.obj, r.arr
	}
	a := filepath.Join(ws, "a.txt")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	code, _, arr := call(t, "GET", url+"/api/history", testToken, "")
	if code != 200 || arr == nil || len(arr) != 0 {
		t.Fatalf("history before any op: %d %v, want 200 []", code, arr)
	}
	if code, obj, _ := call(t, "POST", url+"/api/rewind", testToken, `{"turn":1,"scope":"code"}`); code != 200 {
		t.Fatalf("rewind: %d %v", code, obj)
	}
	if err := os.WriteFile(a, []byte("by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, obj, _ := call(t, "POST", url+"/api/undo", testToken, `{"dry_run":true}`)
	if code != 200 || obj["dry_run"] != true || len(obj["conflicts"].([]any)) != 1 {
		t.Fatalf("undo dry run: %d %v", code, obj)
	}
	if got := read(); got != "by hand\n" {
		t.Fatalf("undo dry run changed a.txt to %q", got)
	}
	code, obj, _ = call(t, "POST", url+"/api/undo", testToken, `{}`)
	if code != 409 || obj["result"].(map[string]any)["conflicts"].([]any)[0] != "a.txt" {
		t.Fatalf("undo over a hand edit: %d %v, want 409 naming a.txt", code, obj)
	}
	if code, obj, _ := call(t, "POST", url+"/api/undo", testToken, `{"force":true}`); code != 200 {
		t.Fatalf("forced undo: %d %v", code, obj)
	}
	if got := read(); got != "v2\n" {
		t.Fatalf("after forced undo a.txt = %q", got)
	}

	code, _, arr = call(t, "GET", url+"/api/history", testToken, "")
	if code != 200 || len(arr) != 2 {
		t.Fatalf("history: %d %v", code, arr)
	}
	undo, rewind := arr[0].(map[string]any), arr[1].(map[string]any)
	if undo["kind"] != "undo" || undo["undoes"] != rewind["id"] || rewind["next_redo"] != true || rewind["can_redo"] != true {
		t.Errorf("history entries: %v / %v", undo, rewind)
	}

	if code, obj, _ := call(t, "POST", url+"/api/redo", testToken, `{"dry_run":true}`); code != 200 || obj["dry_run"] != true {
		t.Fatalf("redo dry run: %d %v", code, obj)
	}
	if got := read(); got != "v2\n" {
		t.Fatalf("redo dry run changed a.txt to %q", got)
	}
	if code, obj, _ := call(t, "POST", url+"/api/redo", testToken, ""); code != 200 || obj["changed"] != true {
		t.Fatalf("redo: %d %v", code, obj)
	}
	if got := read(); got != "by hand\n" {
		t.Fatalf("after redo a.txt = %q, want the hand edit back", got)
	}
	code, _, arr = call(t, "GET", url+"/api/history", testToken, "")
	if code != 200 || len(arr) != 3 || arr[0].(map[string]any)["kind"] != "redo" || arr[0].(map[string]any)["next_undo"] != true {
		t.Fatalf("history after redo: %d %v", code, arr)
	}

	for _, tc := range []struct {
		method, path, token, body string
		code                      int
	}{
		{"GET", "/api/history", "", "", 401},
		{"POST", "/api/redo", "", "", 401},
		{"POST", "/api/redo", testToken, ``, 409}, // nothing left to redo
		{"POST", "/api/redo", testToken, `{`, 400},
		{"POST", "/api/redo", testToken, `{"op":-1}`, 400},
		{"POST", "/api/undo", testToken, `{"op":99}`, 404},
		{"POST", "/api/redo", testToken, `{"op":1}`, 409}, // in effect: nothing to redo
	} {
		if code, obj, _ := call(t, tc.method, url+tc.path, tc.token, tc.body); code != tc.code {
			t.Errorf("%s %s %s: %d %v, want %d", tc.method, tc.path, tc.body, code, obj, tc.code)
		}
	}
}
