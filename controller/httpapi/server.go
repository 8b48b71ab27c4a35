package httpapi

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/ckpt/ckpt/controller"
)

// DefaultLimits are the timeouts of `ckpt serve`: generous for a person's
// browser, short enough that a stalled client lets go of its connection.
func DefaultLimits() Limits {
	return Limits{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 120 * time.Second,
		Poll: DefaultPollInterval, KeepAlive: DefaultKeepAlive}
}

// Server serves the API of a session, and any other handlers, on one TCP
// address: Listen, then Serve until the context ends. It is what `ckpt
// serve` runs, for any embedder. Its methods are not safe for concurrent
// use; the handlers it serves are.
type Server struct {
	// Addr is the TCP address, HOST:PORT (CheckAddr). Unless AllowRemote,
	// the listener must be loopback (Listen).
	Addr        string
	AllowRemote bool
	// Limits are the server's timeouts, and the API's (API).
	Limits Limits

	ln  net.Listener
	mux *http.ServeMux
}

// Listen listens on Addr and returns a URL a browser on this machine can
// open, and whether the listener is reachable from other machines (see
// Listen for the errors).
func (s *Server) Listen() (url string, remote bool, err error) {
	s.ln, url, remote, err = Listen(s.Addr, s.AllowRemote)
	return url, remote, err
}

// Bound is the address the server listens on, once Listen succeeded.
func (s *Server) Bound() net.Addr { return s.ln.Addr() }

// Handle serves h at pattern (an http.ServeMux pattern).
func (s *Server) Handle(pattern string, h http.Handler) {
	if s.mux == nil {
		s.mux = http.NewServeMux()
	}
	s.mux.Handle(pattern, h)
}

// API serves c's API and web page (NewHandler) at "/", with the request
// timeouts and the event stream's intervals of the server's Limits. c
// must outlive the server.
func (s *Server) API(c *controller.Controller, o Options) {
	o.PollInterval, o.KeepAlive, o.BodyTimeout, o.WriteTimeout = s.Limits.Poll, s.Limits.KeepAlive, s.Limits.Read, s.Limits.Write
	s.Handle("/", NewHandler(c, o))
}

// Serve serves what Handle and API set up until ctx ends, then shuts down
// as Serve does; it returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context) error {
	if s.mux == nil {
		s.mux = http.NewServeMux()
	}
	return Serve(ctx, s.ln, s.mux, s.Limits)
}

// Close closes the listener of a server that will not Serve.
func (s *Server) Close() error { return s.ln.Close() }
