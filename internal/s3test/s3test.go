// Package s3test starts a real S3 server for tests: versitygw (Apache-2.0)
// in front of a temp directory, on loopback. Tests that need it are skipped
// with a message saying how to install it when the binary is not found.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/loopback/loopbacktest"
	"github.com/ckpt/ckpt/remote/backend/s3"
)

// Access and Secret are the credentials the test server accepts.
const (
	Access = "ckpttestaccess"
	Secret = "ckpttestsecret0123456789"
)

// Binary finds versitygw: $CKPT_VERSITYGW, else PATH, else the CI cache
// ($HOME/.cache/ckpt-ci/bin). It returns "" when there is none.
func Binary() string {
	if p := os.Getenv("CKPT_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "ckpt-ci", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Server is a running versitygw.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	Dir  string // the posix backend's directory
	cmd  *exec.Cmd
	bin  string
	done chan struct{}
}

// Start starts versitygw for the test, or skips the test when it is not
// installed. The server is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("versitygw not found: set $CKPT_VERSITYGW or run `GOBIN=$HOME/.cache/ckpt-ci/bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` (.ci/run does)")
	}
	s := &Server{Dir: t.TempDir(), bin: bin}
	if err := s.start(loopbacktest.Addr(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// start runs versitygw on addr and waits until it listens.
func (s *Server) start(addr string) error {
	s.Addr, s.URL = addr, "http://"+addr
	s.cmd = exec.Command(s.bin, "--access", Access, "--secret", Secret, "--port", addr, "posix", s.Dir)
	s.cmd.Stdout, s.cmd.Stderr = nil, nil
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("s3test: start versitygw: %w", err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(2 * time.Minute) // a safety net: versitygw starts slowly on a loaded machine
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("s3test: versitygw exited at start")
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.Kill()
	return fmt.Errorf("s3test: versitygw did not listen on %s within 2 minutes", addr)
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts the server again on the same address and directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(s.Addr); err != nil {
		t.Fatal(err)
	}
}

// Config returns a backend configuration for bucket (created if needed)
// under prefix.
func (s *Server) Config(t testing.TB, bucket, prefix string) s3.Config {
	t.Helper()
	cfg := s3.Config{Endpoint: s.URL, Bucket: bucket, Prefix: prefix, AccessKey: Access, SecretKey: Secret}
	b, err := s3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A hang guard: versitygw answers slowly on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := b.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	return cfg
}
