package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/s3test"
)

// BenchmarkRemoteLatency: with a remote configured behind a proxy that adds
// 100 ms to every request (a distant bucket), `ckpt capture` of a new 8 KiB
// file as a whole process takes what it takes with no remote at all: the
// hot path never waits for the network. The two runs alternate, one of
// each per iteration, so a slow moment of the machine hits both. It also
// times `ckpt sync --wait` of 200 such files through the proxy and straight
// to the server. Needs versitygw (skipped otherwise, as the remote tests).
//
//	go test -run '^$' -bench RemoteLatency -benchtime 40x ./cmd/ckpt
func BenchmarkRemoteLatency(b *testing.B) {
	srv := s3test.Start(b)
	srv.Config(b, "ckpt", "")
	bin := buildBinary(b)
	proxy, proxyURL := startProxy(b, srv.Addr)
	proxy.set(func(*http.Request) fault { return fault{delay: 100 * time.Millisecond} })
	root := b.TempDir()
	base := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CKPT_") && !strings.HasPrefix(kv, "AWS_") {
			base = append(base, kv)
		}
	}
	remoteEnv := func(endpoint string) []string {
		return append(append([]string(nil), base...), "CKPT_REMOTE=s3://ckpt/bench", "AWS_ENDPOINT_URL="+endpoint,
			"AWS_ACCESS_KEY_ID="+s3test.Access, "AWS_SECRET_ACCESS_KEY="+s3test.Secret, "AWS_REGION=us-east-1")
	}
	type side struct {
		name, ws, store string
		env             []string
		times           []time.Duration
	}
	sides := []*side{
		{name: "without-remote", env: base},
		{name: "remote-100ms", env: remoteEnv(proxyURL)},
	}
	ckpt := func(s *side, args ...string) time.Duration {
		b.Helper()
		cmd := exec.Command(bin, append([]string{"--workspace", s.ws, "--store", s.store}, args...)...)
		cmd.Env = s.env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: ckpt %v: %v: %s", s.name, args, err, stderr.String())
		}
		return time.Since(start)
	}
	body := bytes.Repeat([]byte("package x // 8 KiB of source\n"), 8<<10/29)
	for _, s := range sides {
		s.ws, s.store = filepath.Join(root, s.name, "ws"), filepath.Join(root, s.name, "store")
		os.MkdirAll(s.ws, 0o755)
		ckpt(s, "turn", "bench")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range sides {
			s := sides[(i+j)%2]
			f := filepath.Join(s.ws, fmt.Sprintf("f%05d.go", i))
			if err := os.WriteFile(f, body, 0o644); err != nil {
				b.Fatal(err)
			}
			s.times = append(s.times, ckpt(s, "capture", f))
		}
	}
	b.StopTimer()
	p50 := func(ts []time.Duration) float64 {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		return float64(ts[len(ts)/2].Microseconds()) / 1000
	}
	without, with := p50(sides[0].times), p50(sides[1].times)
	b.ReportMetric(without, "capture-p50-ms-without-remote")
	b.ReportMetric(with, "capture-p50-ms-remote-100ms")
	b.ReportMetric(with/without, "capture-ratio")

	// Sync of 200 files, through the slow proxy and straight to the server,
	// each into its own prefix so both upload everything.
	s := sides[1]
	ckpt(s, "turn", "sync")
	for i := 0; i < 200; i++ {
		f := filepath.Join(s.ws, fmt.Sprintf("s%03d.go", i))
		os.WriteFile(f, append([]byte(fmt.Sprintf("// %d\n", i)), body...), 0o644)
		ckpt(s, "capture", f)
	}
	direct := &side{name: "direct", ws: s.ws, store: s.store, env: remoteEnv(srv.URL)}
	direct.env = append(direct.env, "CKPT_REMOTE=s3://ckpt/direct")
	slow := ckpt(s, "sync", "--wait")
	fast := ckpt(direct, "sync", "--wait")
	b.ReportMetric(slow.Seconds(), "sync-s-remote-100ms")
	b.ReportMetric(fast.Seconds(), "sync-s-direct")
}
