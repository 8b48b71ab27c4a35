package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ckpt/ckpt/controller"
)

// buildBinary builds the real ckpt binary (CGO off, as shipped) once per
// benchmark.
func buildBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "ckpt")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// timeRuns runs the binary once per element of argsList and reports the
// p50 and p95 wall time of one whole process.
func timeRuns(b *testing.B, bin, ws, store string, argsList [][]string) {
	b.Helper()
	times := make([]time.Duration, 0, len(argsList))
	b.ResetTimer()
	for _, args := range argsList {
		cmd := exec.Command(bin, append([]string{"--workspace", ws, "--store", store}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("ckpt %v: %v: %s", args, err, stderr.String())
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkProcessCapture: `ckpt capture` of one new 8 KiB file as a whole
// process (target p50 ≤ 15 ms).
func BenchmarkProcessCapture(b *testing.B) {
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	if code, _, errs := ckptRunB(ws, store, "turn", "bench"); code != 0 {
		b.Fatal(errs)
	}
	var argsList [][]string
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("f%05d.go", i)
		if err := os.WriteFile(filepath.Join(ws, name), bytes.Repeat([]byte("package x // 8 KiB of source\n"), 8<<10/29), 0o644); err != nil {
			b.Fatal(err)
		}
		argsList = append(argsList, []string{"capture", filepath.Join(ws, name)})
	}
	timeRuns(b, bin, ws, store, argsList)
}

// BenchmarkProcessList10000: `ckpt list` of a session with 10,000 turns
// (target ≤ 50 ms).
func BenchmarkProcessList10000(b *testing.B) {
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.go"), []byte("package a\n"), 0o644)
	for i := 0; i < 10000; i++ {
		if _, err := c.BeginTurn(ctx, fmt.Sprintf("prompt number %d", i), controller.TurnOptions{}); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.go"}}); errs[0] != nil {
				b.Fatal(errs[0])
			}
		}
	}
	c.Close()
	argsList := make([][]string, b.N)
	for i := range argsList {
		argsList[i] = []string{"list"}
	}
	timeRuns(b, bin, ws, store, argsList)
}

func ckptRunB(ws, store string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--workspace", ws, "--store", store}, args...), nil, &out, &errb)
	return code, out.String(), errb.String()
}
