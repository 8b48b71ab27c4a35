package controller_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// sourceLike returns n bytes that compress like source code.
func sourceLike(seed int64, n int) []byte {
	r := rand.New(rand.NewSource(seed))
	words := []string{"func", "return", "if", "err", "!=", "nil", "{", "}", "ctx", "context.Context", "string", "int", "for", ":=", "range", "x", "y", "fmt.Errorf", "\n\t", "\n"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.Intn(len(words))])
		b.WriteByte(' ')
		if r.Intn(7) == 0 {
			fmt.Fprintf(&b, "v%d ", r.Intn(1000))
		}
	}
	return []byte(b.String()[:n])
}

// BenchmarkCapture is one in-process Capture of a fresh 8 KiB file
// (target ≤ 0.5 ms), blob and index row durable on return.
func BenchmarkCapture(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	e.turn("bench")
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("f%06d.go", i)
		if err := os.WriteFile(filepath.Join(e.ws, paths[i]), sourceLike(int64(i), 8<<10), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(8 << 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{paths[i]}}); errs[0] != nil {
			b.Fatal(errs[0])
		}
	}
}

// BenchmarkRewind1000 rewinds 1,000 modified 8 KiB files (target ≤ 1.5 s)
// and, in the same run, times `git checkout` of the same change in a
// scratch repository (reported as git-ms and the ratio ckpt/git). The
// files were modified just before the rewind: their stat is racy, so the
// last look before each rename reads the file again.
func BenchmarkRewind1000(b *testing.B) { benchRewind1000(b, false) }

// BenchmarkRewind1000OldFiles is BenchmarkRewind1000 with the modified
// files last changed long ago, as when a rewind comes minutes after the
// edits: the plan's stat of each file vouches for it at the rename, and
// each current file is read once.
func BenchmarkRewind1000OldFiles(b *testing.B) { benchRewind1000(b, true) }

func benchRewind1000(b *testing.B, old bool) {
	const n = 1000
	ctx := context.Background()
	var ckptTotal, ckptCPU, gitTotal time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newEnv(b)
		for j := 0; j < n; j++ {
			e.write(fmt.Sprintf("d%02d/f%04d.go", j%20, j), string(sourceLike(int64(j), 8<<10)))
		}
		e.turn("edit everything")
		for j := 0; j < n; j++ {
			e.edit(fmt.Sprintf("d%02d/f%04d.go", j%20, j), string(sourceLike(int64(j+n), 8<<10)))
			if old {
				ageFiles(e, fmt.Sprintf("d%02d/f%04d.go", j%20, j))
			}
		}
		b.StartTimer()
		start, cpu := time.Now(), processCPU(b)
		var res controller.Result
		var err error
		// Labelled, with the goroutines it starts, for a CPU profile of
		// the rewind alone: go tool pprof -tagfocus op=rewind.
		pprof.Do(ctx, pprof.Labels("op", "rewind"), func(ctx context.Context) {
			res, err = e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{})
		})
		ckptTotal += time.Since(start)
		ckptCPU += processCPU(b) - cpu
		b.StopTimer()
		if err != nil || len(res.Restored) != n {
			b.Fatalf("rewind: %d restored, %v", len(res.Restored), err)
		}
		if d, ok := gitCheckout(b, n); ok {
			gitTotal += d
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(ckptTotal.Milliseconds())/float64(b.N), "ckpt-ms")
	b.ReportMetric(float64(ckptCPU.Milliseconds())/float64(b.N), "ckpt-cpu-ms")
	if gitTotal > 0 {
		b.ReportMetric(float64(gitTotal.Milliseconds())/float64(b.N), "git-ms")
		b.ReportMetric(float64(ckptTotal)/float64(gitTotal), "ckpt/git")
	}
}

// gitCheckout builds the same change in a scratch git repository and times
// `git checkout -- .` undoing it. It reports false when git is missing.
func gitCheckout(b *testing.B, n int) (time.Duration, bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return 0, false
	}
	dir := b.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(seedOff int) {
		for j := 0; j < n; j++ {
			p := filepath.Join(dir, fmt.Sprintf("d%02d/f%04d.go", j%20, j))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, sourceLike(int64(j+seedOff), 8<<10), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	git("init", "-q")
	write(0)
	git("add", "-A")
	git("commit", "-qm", "base")
	write(n)
	start := time.Now()
	git("checkout", "--", ".")
	return time.Since(start), true
}

// BenchmarkBeginTurn opens a turn after one capture: the path that trims
// the session's change log, so each iteration past the log's bound also
// deletes the rows that fell out of it.
func BenchmarkBeginTurn(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	e.turn("bench")
	if err := os.WriteFile(filepath.Join(e.ws, "a.go"), sourceLike(1, 8<<10), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.go"}}); errs[0] != nil {
			b.Fatal(errs[0])
		}
		if _, err := e.c.BeginTurn(ctx, "next", controller.TurnOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
