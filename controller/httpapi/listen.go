package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
)

// NotLoopbackError is Listen's error for an address that bound beyond
// this machine when that was not allowed.
type NotLoopbackError struct {
	Bound net.Addr // where it bound
}

func (e *NotLoopbackError) Error() string {
	return "listens on " + e.Bound.String() + ", which is not loopback"
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

// Limits are a server's timeouts, as http.Server's fields of those names.
type Limits struct {
	ReadHeader, Read, Write, Idle time.Duration
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
