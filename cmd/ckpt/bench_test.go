package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
// p50 and p95 wall time of one whole process, and the p50 of its CPU time
// (user + system) and of its minor page faults, which a shared machine
// distorts far less than wall time.
func timeRuns(b *testing.B, bin, ws, store string, argsList [][]string) {
	b.Helper()
	times := make([]time.Duration, 0, len(argsList))
	cpu := make([]time.Duration, 0, len(argsList))
	faults := make([]int64, 0, len(argsList))
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
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		if n, ok := minorFaults(cmd.ProcessState); ok {
			faults = append(faults, n)
		}
	}
	b.StopTimer()
	slices.Sort(times)
	slices.Sort(cpu)
	slices.Sort(faults)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "cpu-p50-ms")
	if len(faults) > 0 {
		b.ReportMetric(float64(faults[len(faults)/2]), "minflt-p50")
	}
}

// benchSource is 8 KiB of source text that no other i gives, so that every
// capture stores a new blob (the same bytes would be deduplicated).
func benchSource(i int) []byte {
	return append([]byte(fmt.Sprintf("// file %d\n", i)), bytes.Repeat([]byte("package x // 8 KiB of source\n"), 8<<10/29)...)
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
		if err := os.WriteFile(filepath.Join(ws, name), benchSource(i), 0o644); err != nil {
			b.Fatal(err)
		}
		argsList = append(argsList, []string{"capture", filepath.Join(ws, name)})
	}
	timeRuns(b, bin, ws, store, argsList)
}

// BenchmarkProcessCaptureSyscalls: the system calls and fsyncs of one
// `ckpt capture` of a new 8 KiB file, all threads, counted by strace -f -c
// (skipped without strace). docs/performance.md lists what each fsync is
// for; a change that adds one shows here.
func BenchmarkProcessCaptureSyscalls(b *testing.B) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		b.Skip("strace not installed")
	}
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	if code, _, errs := ckptRunB(ws, store, "turn", "bench"); code != 0 {
		b.Fatal(errs)
	}
	var calls, syncs, pageIO int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := filepath.Join(ws, fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(name, benchSource(i), 0o644); err != nil {
			b.Fatal(err)
		}
		summary := filepath.Join(b.TempDir(), "strace")
		cmd := exec.Command(strace, "-f", "-c", "-o", summary, bin, "--workspace", ws, "--store", store, "capture", name)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("strace ckpt capture: %v: %s", err, out)
		}
		text, err := os.ReadFile(summary)
		if err != nil {
			b.Fatal(err)
		}
		n, s, io := straceCounts(string(text))
		calls += n
		syncs += s
		pageIO += io
	}
	b.StopTimer()
	b.ReportMetric(float64(calls)/float64(b.N), "syscalls/op")
	b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
	b.ReportMetric(float64(pageIO)/float64(b.N), "pread+pwrite/op")
}

// straceCounts reads strace -c's table: the total number of calls (which
// the Go runtime's futex and nanosleep calls make vary with the machine's
// load), those of fsync, fdatasync and syncfs, and those of pread64 and
// pwrite64 (SQLite's page reads and writes, which do not vary).
func straceCounts(table string) (total, syncs, pageIO int64) {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		name := f[len(f)-1]
		// Rows are "% time seconds usecs/call calls [errors] syscall".
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "total":
			total = n
		case "fsync", "fdatasync", "syncfs":
			syncs += n
		case "pread64", "pwrite64":
			pageIO += n
		}
	}
	return total, syncs, pageIO
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
