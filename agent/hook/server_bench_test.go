package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// benchText is n bytes of source-like text, different for each seed.
func benchText(n, seed int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "func f%d_%d(x int) int { return x * %d }\n", seed, i, seed*31+i)
	}
	return b.Bytes()[:n]
}

// BenchmarkServerPreToolUse: a Claude Code PreToolUse event for a new
// 8 KiB file POSTed over loopback (keep-alive) to the resident hook
// server, as bench/compare's row does, a new prompt every 50 tool calls;
// compare BenchmarkControllerCapture, the capture alone. For a CPU
// profile of the server's side: -cpuprofile, then focus on ServeHTTP.
func BenchmarkServerPreToolUse(b *testing.B) {
	ws, store := b.TempDir(), b.TempDir()
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	cfg, tok, err := Configure(store, "127.0.0.1:1", root, false)
	if err != nil || len(cfg.Tokens) != 1 {
		b.Fatal(err)
	}
	s := NewServer(&Handler{Store: store}, "test", io.Discard)
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	defer srv.Close()
	cl := &http.Client{}
	post := func(ev map[string]any) {
		body, _ := json.Marshal(ev)
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/hook/claude", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(out) != 0 {
			b.Fatalf("%s: %s", resp.Status, out)
		}
	}
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": "bench", "cwd": root, "hook_event_name": name, "transcript_path": ""}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	post(ev("UserPromptSubmit", map[string]any{"prompt": "bench"}))
	created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(created)
	was := created[0].Value.Uint64()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i%50 == 49 {
			post(ev("UserPromptSubmit", map[string]any{"prompt": fmt.Sprint("bench ", i)}))
		}
		f := filepath.Join(root, fmt.Sprintf("h%06d.go", i))
		if err := os.WriteFile(f, benchText(8192, i), 0o644); err != nil {
			b.Fatal(err)
		}
		e := ev("PreToolUse", map[string]any{"tool_name": "Write", "tool_use_id": fmt.Sprint("t", i),
			"tool_input": map[string]any{"file_path": f, "content": "x"}})
		b.StartTimer()
		post(e)
	}
	b.StopTimer()
	metrics.Read(created)
	b.ReportMetric(float64(created[0].Value.Uint64()-was)/float64(b.N), "goroutines/op")
}

// BenchmarkControllerCapture: Controller.Capture of a new 8 KiB file in
// an open turn, in process.
func BenchmarkControllerCapture(b *testing.B) {
	ctx := context.Background()
	ws, store := b.TempDir(), b.TempDir()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: "bench", Store: store})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.BeginTurn(ctx, "bench", controller.TurnOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := filepath.Join(ws, fmt.Sprintf("h%06d.go", i))
		if err := os.WriteFile(f, benchText(8192, i), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{f}}); errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
}
