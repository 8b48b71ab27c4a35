//go:build unix

package retention_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

const (
	gcBlobs = 100_000 // in the store
	gcLive  = 50_000  // of them referenced by a session
)

var (
	gcTemplateOnce sync.Once
	gcTemplate     string // a store to copy for each collection
	gcTemplateErr  error
)

// gcStore returns a store directory holding gcBlobs small distinct blobs,
// the first gcLive of them referenced by one turn's snapshots (the rest
// garbage). It is built once per test binary, outside any timing.
func gcStore(b *testing.B) string {
	b.Helper()
	gcTemplateOnce.Do(func() {
		start := time.Now()
		gcTemplate, gcTemplateErr = buildGCStore()
		b.Logf("built the %d-blob store in %v", gcBlobs, time.Since(start).Round(time.Millisecond))
	})
	if gcTemplateErr != nil {
		b.Fatal(gcTemplateErr)
	}
	return gcTemplate
}

func gcContent(i int) string { return fmt.Sprintf("blob %d of the gc benchmark\n", i) }

func buildGCStore() (string, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ckpt-gc-bench-")
	if err != nil {
		return "", err
	}
	scratch = append(scratch, dir)
	store, ws := filepath.Join(dir, "store"), filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return "", err
	}
	ctl, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		return "", err
	}
	defer ctl.Close()
	// The blobs and the index are opened beside the controller, as another
	// process would, to add what no front-end can: unreferenced blobs in
	// bulk and snapshots of paths that were never in the workspace.
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		return "", err
	}
	defer blobs.Close()
	batch := blobs.NewBatch()
	ids := make([]cas.ID, gcBlobs)
	for i := range ids {
		if ids[i], _, err = batch.Put(ctx, strings.NewReader(gcContent(i))); err != nil {
			batch.Abort()
			return "", err
		}
	}
	if err := batch.Commit(ctx); err != nil {
		return "", err
	}
	cp, err := ctl.BeginTurn(ctx, "reference half the blobs", controller.TurnOptions{})
	if err != nil {
		return "", err
	}
	idx, err := checkpoints.OpenSession(ctx, store, ctl.Session(), false)
	if err != nil {
		return "", err
	}
	defer idx.Close()
	for i := range gcLive {
		snap := checkpoints.FileSnap{Path: fmt.Sprintf("d%03d/f%05d.txt", i%1000, i), Content: &ids[i], Mode: 0o644, Size: int64(len(gcContent(i)))}
		if _, err := idx.AddSnap(ctx, cp.ID, snap); err != nil {
			return "", err
		}
	}
	return store, nil
}

// copyDir copies a store directory tree (regular files only).
func copyDir(dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o600)
	})
}

// BenchmarkGC100k collects a store of 100,000 blobs of which 50,000 are
// referenced: "api" in this process (wall and CPU time, allocations, and
// the growth of the process's peak RSS), "cli" as `ckpt gc` (wall and CPU
// time, and the child's peak RSS). Each iteration collects a fresh copy of
// the store, made with the timer stopped (so it is in the page cache).
func BenchmarkGC100k(b *testing.B) {
	template := gcStore(b)
	fresh := func(b *testing.B) string {
		b.Helper()
		dst := filepath.Join(b.TempDir(), "store")
		if err := copyDir(dst, template); err != nil {
			b.Fatal(err)
		}
		return dst
	}
	check := func(b *testing.B, rep retention.GCReport) {
		b.Helper()
		if rep.Scanned != gcBlobs || rep.Live != gcLive || rep.Deleted != gcBlobs-gcLive {
			b.Fatalf("gc report %+v, want %d scanned, %d live, %d deleted", rep, gcBlobs, gcLive, gcBlobs-gcLive)
		}
	}
	b.Run("api", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		var peak int64
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			dir := fresh(b)
			st := controller.OpenStore(dir)
			debug.FreeOSMemory() // so the peak measured is this collection's
			resetPeakRSS()
			base, cpu0 := rssKiB("VmRSS"), selfCPU()
			b.StartTimer()
			_, rep, err := st.Retain(ctx, controller.RetainOptions{CollectOnly: true})
			b.StopTimer()
			cpu += selfCPU() - cpu0
			if err != nil {
				b.Fatal(err)
			}
			if grew := rssKiB("VmHWM") - base; grew > peak {
				peak = grew
			}
			check(b, rep)
			st.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(peak)/1024, "peak-RSS-growth-MiB")
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
	b.Run("cli", func(b *testing.B) {
		bin := ckptBinary(b)
		var maxRSS int64
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			dir := fresh(b)
			cmd := exec.Command(bin, "--store", dir, "--json", "gc")
			cmd.Env = cliEnv()
			b.StartTimer()
			out, err := cmd.Output()
			b.StopTimer()
			if err != nil {
				b.Fatalf("ckpt gc: %v\n%s", err, out)
			}
			var rep retention.GCReport
			if err := json.Unmarshal(out, &rep); err != nil {
				b.Fatal(err)
			}
			check(b, rep)
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > maxRSS {
				maxRSS = ru.Maxrss // KiB on Linux
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			b.StartTimer()
		}
		b.ReportMetric(float64(maxRSS)/1024, "peak-RSS-MiB")
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
}

// selfCPU returns the user and system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// rssKiB reads a field of /proc/self/status in KiB, or 0.
func rssKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
