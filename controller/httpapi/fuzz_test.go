package httpapi_test

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

// flushCancel is a recorder that ends the request at its first flush, so
// the event stream returns after its opening comment.
type flushCancel struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (f flushCancel) Flush() {
	f.ResponseRecorder.Flush()
	f.cancel()
}

// snapshot lists every path under dir with its bytes (or link target).
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[rel] = "link:" + target
			return err
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			out[rel] = "file:" + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzHandler sends arbitrary methods, paths, bodies and header variants to
// the handler of a real session whose workspace holds a symlink to a
// directory outside it. No request may panic or end in a 500, a refused
// host, origin or token must be refused before anything else, and nothing
// outside the workspace and the store may change.
// Seeds: testdata/fuzz/FuzzHandler.
func FuzzHandler(f *testing.F) {
	base := f.TempDir()
	ws, store, outside := filepath.Join(base, "ws"), filepath.Join(base, "store"), filepath.Join(base, "outside")
	for _, d := range []string{ws, store, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "out")); err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	for i, name := range []string{"a.txt", "dir/b.txt", "a.txt"} {
		if _, err := c.BeginTurn(ctx, "turn "+name, controller.TurnOptions{}); err != nil {
			f.Fatal(err)
		}
		p := filepath.Join(ws, name)
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
			f.Fatal(errs[0])
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.Repeat("v", i+1)+"\n"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := c.BeginTurn(ctx, "open", controller.TurnOptions{}); err != nil {
		f.Fatal(err)
	}
	before := snapshot(f, outside)
	h := httpapi.NewHandler(c, httpapi.Options{Token: testToken, Sessions: true})
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}
	const host = "127.0.0.1:4242"

	f.Add("GET", "/api/checkpoints", []byte(nil), uint8(0))
	f.Fuzz(func(t *testing.T, method, target string, body []byte, variant uint8) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		rctx, cancel := context.WithCancel(context.WithValue(ctx, http.LocalAddrContextKey, net.Addr(local)))
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, method, "http://"+host+target, bytes.NewReader(body))
		if err != nil {
			return // not a request a server could receive
		}
		noToken, foreignOrigin, foreignHost := variant&1 != 0, variant&2 != 0, variant&4 != 0
		if !noToken {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		if foreignOrigin {
			req.Header.Set("Origin", "http://evil.example")
		}
		if foreignHost {
			req.Host = "evil.example:4242"
		}
		rec := flushCancel{httptest.NewRecorder(), cancel}
		h.ServeHTTP(rec, req)
		code := rec.Code
		isAPI := req.URL.Path == "/api" || strings.HasPrefix(req.URL.Path, "/api/")
		safe := req.Method == "GET" || req.Method == "HEAD"
		switch {
		case code == http.StatusInternalServerError:
			t.Fatalf("%s %q: 500 %s", method, target, rec.Body.String())
		case foreignHost && code != http.StatusForbidden:
			t.Fatalf("%s %q with a foreign Host: %d", method, target, code)
		case foreignOrigin && (isAPI || !safe) && code != http.StatusForbidden:
			t.Fatalf("%s %q with a foreign Origin: %d", method, target, code)
		case !foreignHost && !foreignOrigin && noToken && (isAPI || !safe) && code != http.StatusUnauthorized:
			t.Fatalf("%s %q without the token: %d", method, target, code)
		}
		if isAPI && code >= 400 {
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("%s %q: %d with content type %q", method, target, code, ct)
			}
		}
		if after := snapshot(t, outside); !maps.Equal(before, after) {
			t.Fatalf("%s %q %q changed the directory outside the workspace: %v", method, target, body, after)
		}
		ents, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"outside", "store", "ws"}) {
			t.Fatalf("%s %q %q created %v beside the workspace and store", method, target, body, names)
		}
	})
}
