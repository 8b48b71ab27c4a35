package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
	"github.com/ckpt/ckpt/internal/jsondoc/jsondoctest"
)

// TestNoNullLists calls every JSON endpoint on a new session, with one
// turn and nothing captured, and fails on any list answered as null.
func TestNoNullLists(t *testing.T) {
	t.Parallel()
	ws, store := t.TempDir(), t.TempDir()
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.BeginTurn(ctx, "first", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	base := serve(t, c, httpapi.Options{Sessions: true})
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/api/session", "", http.StatusOK},
		{"GET", "/api/sessions", "", http.StatusOK},
		{"GET", "/api/checkpoints", "", http.StatusOK},
		{"GET", "/api/conversation", "", http.StatusOK},
		{"GET", "/api/diff?turn=0", "", http.StatusOK},
		{"GET", "/api/history", "", http.StatusOK},
		{"POST", "/api/rewind", `{"turn": 0, "scope": "code", "dry_run": true}`, http.StatusOK},
		{"POST", "/api/rewind", `{"turn": 0, "scope": "code"}`, http.StatusOK},
		{"POST", "/api/undo", `{"dry_run": true}`, http.StatusConflict},
		{"POST", "/api/redo", ``, http.StatusConflict},
		{"POST", "/api/summarize", `{"turn": 0, "direction": "from", "text": "s"}`, http.StatusOK},
		{"GET", "/api/history", "", http.StatusOK},
		{"POST", "/api/undo", ``, http.StatusOK},
		{"POST", "/api/redo", `{"dry_run": true}`, http.StatusOK},
		{"POST", "/api/fork", `{"turn": 0, "to": "forked"}`, http.StatusOK},
		{"GET", "/api/sessions", "", http.StatusOK},
		{"GET", "/api/history", "", http.StatusOK},
	} {
		r := call(t, tc.method, base+tc.path, testToken, tc.body)
		if r.code != tc.code {
			t.Errorf("%s %s: status %d, want %d: %s", tc.method, tc.path, r.code, tc.code, r.raw)
		}
		// A session's "parent" is an object, or null for one that is not a fork.
		nulls, err := jsondoctest.Nulls([]byte(r.raw), "parent")
		if err != nil || len(nulls) > 0 {
			t.Errorf("%s %s: null at %q (%v): %s", tc.method, tc.path, nulls, err, r.raw)
		}
	}
}
