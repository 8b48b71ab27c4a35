// Package loopback is the one rule for "this address stays on this
// machine" that the hook server's installer and the HTTP API share.
package loopback

import (
	"net"
	"strings"
)

// Host says whether host is loopback: a loopback IP or the name
// localhost.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
