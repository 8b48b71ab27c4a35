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

// timeRuns runs the binary once per element of argsList (see timeCmds).
func timeRuns(b *testing.B, bin, ws, store string, argsList [][]string) {
	b.Helper()
	cmds := make([]*exec.Cmd, 0, len(argsList))
	for _, args := range argsList {
		cmds = append(cmds, exec.Command(bin, append([]string{"--workspace", ws, "--store", store}, args...)...))
	}
	timeCmds(b, cmds)
}

// timeCmds runs each command in turn, failing on an error exit or on
// output to stderr, and reports the p50 and p95 wall time of one whole
// process, and the p50 of its CPU time (user + system) and of its minor
// page faults, which a shared machine distorts far less than wall time.
func timeCmds(b *testing.B, cmds []*exec.Cmd) {
	b.Helper()
	times := make([]time.Duration, 0, len(cmds))
	cpu := make([]time.Duration, 0, len(cmds))
	faults := make([]int64, 0, len(cmds))
	b.ResetTimer()
	for _, cmd := range cmds {
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		times = append(times, time.Since(start))
		if err != nil || stderr.Len() > 0 {
			b.Fatalf("%v: %v: %s", cmd.Args, err, stderr.String())
		}
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
	strace := straceOrSkip(b)
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	if code, _, errs := ckptRunB(ws, store, "turn", "bench"); code != 0 {
		b.Fatal(errs)
	}
	countSyscalls(b, func(i int, summary string) *exec.Cmd {
		name := filepath.Join(ws, fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(name, benchSource(i), 0o644); err != nil {
			b.Fatal(err)
		}
		return exec.Command(strace, "-f", "-c", "-o", summary, bin, "--workspace", ws, "--store", store, "capture", name)
	})
}

// BenchmarkProcessHookSyscalls: as BenchmarkProcessCaptureSyscalls for
// the default command hook, `ckpt hook claude`, fed a PreToolUse Edit of
// a new 8 KiB file: the same capture, reached through the hook's
// workspace and session resolution.
func BenchmarkProcessHookSyscalls(b *testing.B) {
	strace := straceOrSkip(b)
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	const session = "5f0c6a2e-8d7b-4c1a-9e3f-2b4d6a8c0e1f"
	env := []string{"CKPT_HOME=" + store, "HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")}
	hook := func(cmd *exec.Cmd, ev string) *exec.Cmd {
		cmd.Dir, cmd.Env, cmd.Stdin = ws, env, strings.NewReader(ev)
		return cmd
	}
	if out, err := hook(exec.Command(bin, "hook", "claude", "--strict"),
		hookEventJSON(ws, session, "UserPromptSubmit", "", "bench")).CombinedOutput(); err != nil {
		b.Fatalf("ckpt hook claude: %v: %s", err, out)
	}
	countSyscalls(b, func(i int, summary string) *exec.Cmd {
		name := filepath.Join(ws, fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(name, benchSource(i), 0o644); err != nil {
			b.Fatal(err)
		}
		return hook(exec.Command(strace, "-f", "-c", "-o", summary, bin, "hook", "claude", "--strict"),
			hookEventJSON(ws, session, "PreToolUse", name, ""))
	})
}

func straceOrSkip(b *testing.B) string {
	b.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		b.Skip("strace not installed")
	}
	return strace
}

// countSyscalls runs the command cmd(i, summary) makes, strace -c writing
// its table to summary, once per op, and reports the mean counts per op.
func countSyscalls(b *testing.B, cmd func(i int, summary string) *exec.Cmd) {
	b.Helper()
	var calls, syncs, pageIO, unlinks int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		summary := filepath.Join(b.TempDir(), "strace")
		c := cmd(i, summary)
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v: %s", c.Args, err, out)
		}
		text, err := os.ReadFile(summary)
		if err != nil {
			b.Fatal(err)
		}
		n := straceCounts(string(text))
		calls += n.total
		syncs += n.syncs
		pageIO += n.pageIO
		unlinks += n.unlinks
	}
	b.StopTimer()
	b.ReportMetric(float64(calls)/float64(b.N), "syscalls/op")
	b.ReportMetric(float64(syncs)/float64(b.N), "fsyncs/op")
	b.ReportMetric(float64(pageIO)/float64(b.N), "pread+pwrite/op")
	b.ReportMetric(float64(unlinks)/float64(b.N), "unlinks/op")
}

// syscallCounts is what straceCounts reads.
type syscallCounts struct {
	total   int64 // all calls: the Go runtime's futex and nanosleep calls make it vary with the load
	syncs   int64 // fsync, fdatasync and syncfs
	pageIO  int64 // pread64 and pwrite64: SQLite's page reads and writes, which do not vary
	unlinks int64 // unlink and unlinkat: a WAL and its -shm deleted by the last close
}

// straceCounts reads strace -c's table.
func straceCounts(table string) syscallCounts {
	var c syscallCounts
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
			c.total = n
		case "fsync", "fdatasync", "syncfs":
			c.syncs += n
		case "pread64", "pwrite64":
			c.pageIO += n
		case "unlink", "unlinkat":
			c.unlinks += n
		}
	}
	return c
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
