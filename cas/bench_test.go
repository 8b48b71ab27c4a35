//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cas_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

func goroot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// BenchmarkPutSmall puts distinct 8 KiB pieces of Go source, each durable
// when Put returns.
func BenchmarkPutSmall(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goroot(b), "src", "net", "http", "server.go"))
	if err != nil {
		b.Fatal(err)
	}
	d := openDisk(b, b.TempDir())
	defer d.Close()
	ctx := context.Background()
	content := bytes.Clone(src[:8<<10])
	b.SetBytes(int64(len(content)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		binary.LittleEndian.PutUint64(content, uint64(i)) // defeat dedup
		if _, _, err := d.Put(ctx, bytes.NewReader(content)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetSmall reads back 8 KiB pieces of Go source, verified.
func BenchmarkGetSmall(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(goroot(b), "src", "net", "http", "server.go"))
	if err != nil {
		b.Fatal(err)
	}
	d := openDisk(b, b.TempDir())
	defer d.Close()
	ctx := context.Background()
	var ids []cas.ID
	for i := 0; i+8<<10 <= len(src); i += 8 << 10 {
		ids = append(ids, castest.Put(b, d, src[i:i+8<<10]))
	}
	b.SetBytes(8 << 10)
	for i := 0; b.Loop(); i++ {
		if _, err := d.Get(ctx, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet1MiB reads back the largest inline blob, verified.
func BenchmarkGet1MiB(b *testing.B) {
	d := openDisk(b, b.TempDir())
	defer d.Close()
	ctx := context.Background()
	id := castest.Put(b, d, castest.Bytes(1, 1<<20))
	b.SetBytes(1 << 20)
	for b.Loop() {
		if _, err := d.Get(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut64MiB(b *testing.B) {
	d := openDisk(b, b.TempDir())
	defer d.Close()
	ctx := context.Background()
	content := castest.Bytes(1, 64<<20)
	b.SetBytes(int64(len(content)))
	var stored int64
	for i := 0; b.Loop(); i++ {
		binary.LittleEndian.PutUint64(content, uint64(i)) // defeat dedup
		id, _, err := d.Put(ctx, bytes.NewReader(content))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		info, err := d.Stat(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		stored = info.Stored
		b.StartTimer()
	}
	b.ReportMetric(float64(stored)/float64(len(content)), "stored/raw")
}

func BenchmarkGet64MiB(b *testing.B) {
	d := openDisk(b, b.TempDir())
	defer d.Close()
	ctx := context.Background()
	content := castest.Bytes(1, 64<<20)
	id := castest.Put(b, d, content)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, err := d.Get(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBulkGoroot puts every file of $GOROOT/src through one Batch fed
// by 2 goroutines, as a first scan of a workspace does, and compares time
// and space with `git add -A` of the same tree into a fresh repository. It
// alternates 3 git and 3 ckpt runs, each into a fresh store, and reports
// the fastest of each (wall clock and user+system CPU), which is the least
// disturbed by other load on the machine. Sizes are the same every run.
func BenchmarkBulkGoroot(b *testing.B) {
	src := filepath.Join(goroot(b), "src")
	var files []string
	var raw int64
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		files = append(files, path)
		raw += fi.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	_, hasGit := exec.LookPath("git")
	ctx := context.Background()
	var ckpt, git run
	for b.Loop() {
		for range 3 {
			b.StopTimer()
			if hasGit == nil {
				git.min(gitAdd(b, src))
			}
			dir := b.TempDir()
			d := openDisk(b, dir)
			b.StartTimer()
			r := measure(func() { bulkPut(b, ctx, d, files) })
			b.StopTimer()
			if err := d.Close(); err != nil {
				b.Fatal(err)
			}
			if _, err := rawDB(b, dir).Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				b.Fatal(err)
			}
			r.bytes, r.disk = diskUsage(b, dir, "blobs.db", "blobs.db-wal", "objects")
			ckpt.min(r)
			b.StartTimer()
		}
	}
	mb := func(n int64) float64 { return float64(n) / 1e6 }
	b.ReportMetric(ckpt.wall.Seconds(), "ckpt-s")
	b.ReportMetric(ckpt.cpu.Seconds(), "ckpt-cpu-s")
	b.ReportMetric(mb(raw), "raw-MB")
	b.ReportMetric(mb(ckpt.bytes), "stored-MB")
	b.ReportMetric(mb(ckpt.disk), "stored-du-MB")
	b.ReportMetric(float64(ckpt.bytes)/float64(raw), "stored/raw")
	b.Logf("%d files, %.1f MB raw: ckpt %v (%v CPU), %.1f MB (%.1f MB on disk), %.3f of raw",
		len(files), mb(raw), ckpt.wall.Round(time.Millisecond), ckpt.cpu.Round(time.Millisecond),
		mb(ckpt.bytes), mb(ckpt.disk), float64(ckpt.bytes)/float64(raw))
	if hasGit != nil {
		b.Log("git not installed; no comparison")
		return
	}
	b.ReportMetric(git.wall.Seconds(), "git-s")
	b.ReportMetric(git.cpu.Seconds(), "git-cpu-s")
	b.ReportMetric(mb(git.bytes), "git-MB")
	b.ReportMetric(mb(git.disk), "git-du-MB")
	b.ReportMetric(git.wall.Seconds()/ckpt.wall.Seconds(), "x-faster-than-git")
	b.ReportMetric(git.cpu.Seconds()/ckpt.cpu.Seconds(), "x-less-cpu-than-git")
	b.ReportMetric(float64(ckpt.bytes)/float64(git.bytes), "stored/git")
	b.ReportMetric(float64(ckpt.disk)/float64(git.disk), "stored-du/git-du")
	b.Logf("git add -A: %v (%v CPU), %.1f MB (%.1f MB on disk); ckpt is %.2fx faster (%.2fx less CPU), stores %.2fx (%.2fx on disk) of git",
		git.wall.Round(time.Millisecond), git.cpu.Round(time.Millisecond), mb(git.bytes), mb(git.disk),
		git.wall.Seconds()/ckpt.wall.Seconds(), git.cpu.Seconds()/ckpt.cpu.Seconds(),
		float64(ckpt.bytes)/float64(git.bytes), float64(ckpt.disk)/float64(git.disk))
}

// run is one timed run: wall clock, user+system CPU, and bytes stored
// (apparent and allocated).
type run struct {
	wall, cpu   time.Duration
	bytes, disk int64
}

// min keeps the fastest times seen and the latest sizes.
func (r *run) min(s run) {
	if r.wall == 0 || s.wall < r.wall {
		r.wall = s.wall
	}
	if r.cpu == 0 || s.cpu < r.cpu {
		r.cpu = s.cpu
	}
	r.bytes, r.disk = s.bytes, s.disk
}

// measure times fn, including the CPU this process spends meanwhile.
func measure(fn func()) run {
	cpu := func() time.Duration {
		var u syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &u)
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	start, startCPU := time.Now(), cpu()
	fn()
	return run{wall: time.Since(start), cpu: cpu() - startCPU}
}

func bulkPut(b *testing.B, ctx context.Context, d *cas.Disk, files []string) {
	batch := d.NewBatch()
	paths := make(chan string)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for p := range paths {
				f, err := os.Open(p)
				if err != nil {
					b.Error(err)
					continue
				}
				_, _, err = batch.Put(ctx, f)
				f.Close()
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	for _, p := range files {
		paths <- p
	}
	close(paths)
	wg.Wait()
	if err := batch.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}

// gitAdd times `git add -A` of src into a fresh repository outside src,
// and measures its objects.
func gitAdd(b *testing.B, src string) run {
	gitDir := filepath.Join(b.TempDir(), "repo.git")
	git := func(args ...string) *exec.Cmd {
		cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir, "--work-tree=" + src}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return cmd
	}
	git("init", "-q")
	start := time.Now()
	cmd := git("add", "-A")
	r := run{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	r.bytes, r.disk = diskUsage(b, gitDir, "objects")
	return r
}

// diskUsage sums the apparent sizes and the allocated blocks (as du does)
// of the named files and trees under dir; missing names count zero.
func diskUsage(b *testing.B, dir string, names ...string) (apparent, disk int64) {
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(dir, name), func(path string, e fs.DirEntry, err error) error {
			if os.IsNotExist(err) {
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if !e.IsDir() {
				apparent += fi.Size()
			}
			disk += fi.Sys().(*syscall.Stat_t).Blocks * 512
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return apparent, disk
}

// BenchmarkCompactQuota compacts blobs.db after a store of n 1 MiB blobs
// was pruned down to its newest 18 (a 20 MiB quota), as `ckpt prune
// --max-bytes 20MiB` does after n turns that each changed a 1 MiB file.
func BenchmarkCompactQuota(b *testing.B) {
	for _, n := range []int{60, 240} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				d, _, _ := quotaStore(b, b.TempDir(), n, 18)
				b.StartTimer()
				if err := d.Compact(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
