package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller/httpapi"
	"github.com/ckpt/ckpt/internal/loopback"
)

func TestListenLoopbackOnly(t *testing.T) {
	ln, url, remote, err := httpapi.Listen("127.0.0.1:0", false)
	if err != nil || remote || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("loopback: %q %v %v", url, remote, err)
	}
	ln.Close()
	var nl *httpapi.NotLoopbackError
	if _, _, remote, err := httpapi.Listen("0.0.0.0:0", false); !errors.As(err, &nl) || !remote || !strings.HasSuffix(err.Error(), ", which is not loopback") {
		t.Errorf("every interface without allowRemote: %v %v", remote, err)
	}
	ln, url, remote, err = httpapi.Listen("0.0.0.0:0", true)
	if err != nil || !remote {
		t.Fatalf("every interface, allowed: %q %v %v", url, remote, err)
	}
	if host, _, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://")); !loopback.Host(host) {
		t.Errorf("every interface: url %s, want a loopback address to open", url)
	}
	ln.Close()
}

// TestServeStopsWithItsContext: Serve answers until its context ends,
// then returns nil and the port is closed.
func TestServeStopsWithItsContext(t *testing.T) {
	ln, url, _, err := httpapi.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- httpapi.Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }), httpapi.Limits{})
	}()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Errorf("body %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after Serve returned")
	}
}

// TestCheckAddr: an address must be HOST:PORT with a valid port, and its
// host loopback unless remote access is allowed.
func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr        string
		allowRemote bool
		want        string // "" : accepted
	}{
		{"127.0.0.1:0", false, ""},
		{"[::1]:8080", false, ""},
		{"LOCALHOST:1", false, ""},
		{"0.0.0.0:0", true, ""},
		{":8080", true, ""},
		{"8080", true, `"8080": want HOST:PORT, such as 127.0.0.1:8080`},
		{"127.0.0.1:notaport", false, `"127.0.0.1:notaport": bad port "notaport"`},
		{"127.0.0.1:99999", false, `"127.0.0.1:99999": bad port "99999"`},
		{"10.0.0.1:80", false, `"10.0.0.1:80": 10.0.0.1 is not loopback`},
		{":0", false, `":0": every interface is not loopback`},
	} {
		err := httpapi.CheckAddr(tc.addr, tc.allowRemote)
		var ae *httpapi.AddrError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.addr, err)
		case tc.want != "" && (!errors.As(err, &ae) || err.Error() != tc.want || ae.NotLoopback != strings.HasSuffix(tc.want, "not loopback")):
			t.Errorf("%s: %v, want %s", tc.addr, err, tc.want)
		}
	}
}

// TestServer: a Server listens, serves the handlers given and the API
// with its limits, refuses to listen beyond loopback unless allowed, and
// stops with its context.
func TestServer(t *testing.T) {
	if _, _, err := (&httpapi.Server{Addr: "0.0.0.0:0"}).Listen(); !errors.As(err, new(*httpapi.NotLoopbackError)) {
		t.Errorf("every interface: %v, want a NotLoopbackError", err)
	}
	_, _, c := session(t)
	srv := &httpapi.Server{Addr: "127.0.0.1:0", Limits: httpapi.DefaultLimits()}
	url, remote, err := srv.Listen()
	if err != nil || remote || !strings.HasSuffix(url, srv.Bound().String()) {
		t.Fatalf("Listen: %q %v %v (bound %v)", url, remote, err, srv.Bound())
	}
	srv.Handle("/hello", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }))
	srv.API(c, httpapi.Options{Token: testToken})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	if r := call(t, "GET", url+"/hello", "", ""); r.code != 200 || r.raw != "hi" {
		t.Errorf("/hello: %d %q", r.code, r.raw)
	}
	if r := call(t, "GET", url+"/api/checkpoints", testToken, ""); r.code != 200 {
		t.Errorf("/api/checkpoints: %d %q", r.code, r.raw)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}
