package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/ckpt/ckpt/internal/loopback"
)

// NotLoopbackError is Listen's error for an address that bound beyond
// this machine when that was not allowed.
type NotLoopbackError struct {
	Bound net.Addr // where it bound
}

func (e *NotLoopbackError) Error() string {
	return "listens on " + e.Bound.String() + ", which is not loopback"
}

// AddrError is CheckAddr's error for an address a server may not listen
// on.
type AddrError struct {
	Addr string
	// NotLoopback: the address is HOST:PORT, but its host is not
	// loopback.
	NotLoopback bool
	problem     string
}

func (e *AddrError) Error() string { return fmt.Sprintf("%q: %s", e.Addr, e.problem) }

// CheckAddr refuses, with an *AddrError, an address that is not HOST:PORT
// with a valid port, or whose host is not loopback (a loopback IP or
// localhost; an empty host is every interface) unless allowRemote. It
// resolves no name: Listen refuses a name that binds beyond loopback.
func CheckAddr(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &AddrError{Addr: addr, problem: "want HOST:PORT, such as 127.0.0.1:8080"}
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return &AddrError{Addr: addr, problem: fmt.Sprintf("bad port %q", port)}
	}
	if loopback.Host(host) || allowRemote {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return &AddrError{Addr: addr, NotLoopback: true, problem: host + " is not loopback"}
}

// Listen listens on TCP addr and returns the listener with a URL a
// browser on this machine can open (for every interface, a loopback
// address of it). Unless allowRemote, an address that binds beyond
// loopback is closed again and refused with a *NotLoopbackError; remote says
// whether the listener is reachable from other machines.
func Listen(addr string, allowRemote bool) (ln net.Listener, url string, remote bool, err error) {
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		return nil, "", false, err
	}
	bound, _ := ln.Addr().(*net.TCPAddr)
	remote = bound == nil || !bound.IP.IsLoopback()
	if remote && !allowRemote {
		ln.Close()
		return nil, "", true, &NotLoopbackError{Bound: ln.Addr()}
	}
	url = "http://" + ln.Addr().String()
	if bound != nil && bound.IP.IsUnspecified() {
		lo := net.IPv4(127, 0, 0, 1)
		if bound.IP.To4() == nil {
			lo = net.IPv6loopback
		}
		url = "http://" + net.JoinHostPort(lo.String(), strconv.Itoa(bound.Port))
	}
	return ln, url, remote, nil
}

// Limits are a server's timeouts, as http.Server's fields of those names,
// and, for a Server's API, how often its event stream polls the session
// and sends a keep-alive (Options' PollInterval and KeepAlive).
type Limits struct {
	ReadHeader, Read, Write, Idle time.Duration
	Poll, KeepAlive               time.Duration
}

// shutdownWait is how long Serve lets requests in flight finish once its
// context ends, before it closes their connections.
const shutdownWait = 5 * time.Second

// Serve serves h on ln with the limits until ctx ends (requests' contexts
// derive from it), then shuts down: requests in flight get shutdownWait
// to finish. It returns nil after a clean shutdown.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, l Limits) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		WriteTimeout:      l.Write,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownWait)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}
