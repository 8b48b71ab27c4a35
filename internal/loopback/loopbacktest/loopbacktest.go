// Package loopbacktest gives tests a loopback address for a server that
// another process binds later (the hook server `ckpt install --port`
// starts, versitygw): a port this process cannot hold open for it.
package loopbacktest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Addr returns "127.0.0.1:PORT" for a port nothing listens on now, below
// the kernel's ephemeral range. A port from net.Listen("…:0") comes from
// that range, and once its listener closes the kernel may hand it to any
// process's outgoing connection or ":0" listener (the many HTTP clients
// and test servers of packages tested side by side) before the server
// binds it; a port below the range is given to nobody who does not ask
// for it by number.
func Addr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	const first = 10000
	for range 200 {
		port := first + rand.IntN(low-first)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: another
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	t.Fatalf("no free loopback port in [%d, %d)", first, low)
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range: Linux
// says; elsewhere 32768 is below every system's default (Linux 32768,
// macOS and Windows 49152).
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < 12000 {
		return fallback
	}
	return min(low, 49152)
}
