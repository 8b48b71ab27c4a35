//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package cas_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

// helper starts this test binary as a helper process running mode on the
// store in dir; see TestHelperProcess.
func helper(t *testing.T, mode, dir string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "CAS_HELPER="+mode, "CAS_DIR="+dir, "CAS_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

// TestHelperProcess is not a test: it is the body of the helper processes
// the multi-process and crash tests start.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("CAS_HELPER")
	if mode == "" {
		t.Skip("run as a helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("CAS_N"))
	d := openDisk(t, os.Getenv("CAS_DIR"))
	defer d.Close()
	switch mode {
	case "multi":
		helperMulti(t, d, n)
	case "crash":
		helperCrash(t, d, n)
	case "exit":
		helperExit(t, d, n)
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}

// multiContent is content i of the multi-process test: every eighth is
// over 1 MiB and goes to a file.
func multiContent(i int) []byte {
	size := 1500 * i
	if i%8 == 7 {
		size = 1<<20 + 1000*i
	}
	return castest.Bytes(uint64(1000+i), size)
}

const multiContents = 48

// helperMulti puts every content, starting at a point that depends on the
// worker, half with Put and half in a batch.
func helperMulti(t *testing.T, d *cas.Disk, worker int) {
	ctx := context.Background()
	b := d.NewBatch()
	for k := range multiContents {
		i := (k + 11*worker) % multiContents
		var err error
		if k%2 == 0 {
			_, _, err = d.Put(ctx, bytes.NewReader(multiContent(i)))
		} else {
			_, _, err = b.Put(ctx, bytes.NewReader(multiContent(i)))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMultiProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for w := range 4 {
		cmd := helper(t, "multi", dir, w)
		wg.Go(func() {
			if out, err := cmd.Output(); err != nil {
				t.Errorf("helper %d: %v\n%s", w, err, out)
			}
		})
	}
	wg.Wait()
	d := openDisk(t, dir)
	defer d.Close()
	for i := range multiContents {
		castest.Check(t, d, cas.Sum(multiContent(i)), multiContent(i))
	}
	if got := len(castest.IDs(t, d)); got != multiContents {
		t.Errorf("Walk listed %d blobs, want %d", got, multiContents)
	}
}

// helperCrash announces it is ready and then puts new blobs, small and
// large, singly and in batches, and versions of one file as deltas, until
// it is killed.
func helperCrash(t *testing.T, d *cas.Disk, round int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(round), 0))
	fmt.Println("ready")
	put := func(k int) error { // a large blob
		size := 1<<20 + rng.IntN(512<<10)
		_, _, err := d.Put(ctx, castest.Content(uint64(round)<<32|uint64(k), int64(size)))
		return err
	}
	// Puts come in fours: two versions of one small file, each hinted at
	// the previous one (a chain of deltas grows while the kill comes), a
	// large blob, a batch.
	version := source(uint64(round), 16<<10)
	var prev cas.ID
	for k := 0; k < 100000; k++ {
		if k%4 < 2 {
			version = edit(version, k)
			id, _, err := d.Put(cas.WithBase(ctx, prev), bytes.NewReader(version))
			if err != nil {
				t.Fatal(err)
			}
			prev = id
			continue
		}
		if k%4 != 3 {
			if err := put(k); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b := d.NewBatch()
		for j := range 3 {
			size := 1000 + j<<20
			if _, _, err := b.Put(ctx, castest.Content(uint64(round)<<32|uint64(k)<<8|uint64(j), int64(size))); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrash kills a writer at a random moment, 50 times, and checks after
// each kill that every blob the index lists reads back verified and that
// reopening leaves no temp files. Blobs verified in an earlier round are
// verified again only in the last one.
func TestCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(42, 0))
	verified := map[cas.ID]bool{}
	midWrite := 0 // kills that left temp files behind
	const rounds = 50
	for round := range rounds {
		cmd := helper(t, "crash", dir, round)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: helper said %q, %v; want ready", round, line, err)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil {
			t.Fatalf("round %d: helper exited before it was killed", round)
		}

		if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) > 0 {
			midWrite++
		}
		d := openDisk(t, dir)
		ids := castest.IDs(t, d)
		for id := range ids {
			if verified[id] && round < rounds-1 {
				continue
			}
			if _, err := d.Get(context.Background(), id); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			verified[id] = true
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.ReadDir(filepath.Join(dir, "tmp"))
		if err != nil {
			t.Fatal(err)
		}
		if len(tmp) > 0 {
			t.Fatalf("round %d: %d temp files remain after reopen, e.g. %s", round, len(tmp), tmp[0].Name())
		}
	}
	var deltas int
	if err := rawDB(t, dir).QueryRow(`SELECT count(*) FROM blobs WHERE enc = 2`).Scan(&deltas); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d blobs (%d deltas) after %d kills, %d of them during a large write", len(verified), deltas, rounds, midWrite)
}

// TestDiskTempCleanup: OpenDisk removes temp files nobody holds locked,
// and leaves those a live writer holds.
func TestDiskTempCleanup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	openDisk(t, dir).Close()
	stale := filepath.Join(dir, "tmp", "blob-stale")
	live := filepath.Join(dir, "tmp", "blob-live")
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	openDisk(t, dir).Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temp file: Stat = %v, want it removed", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("locked temp file: Stat = %v, want it kept", err)
	}
	f.Close()
	openDisk(t, dir).Close()
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("unlocked temp file: Stat = %v, want it removed", err)
	}
}

// exitContent is the content the "exit" helper puts: n bytes, most of them
// random, so that it takes about n bytes of WAL.
func exitContent(n int) []byte { return castest.Bytes(77, n) }

// helperExit puts one content of n bytes, then closes with CloseForExit
// and lets the process exit.
func helperExit(t *testing.T, d *cas.Disk, n int) {
	if _, _, err := d.Put(context.Background(), bytes.NewReader(exitContent(n))); err != nil {
		t.Fatal(err)
	}
	if err := d.CloseForExit(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseForExit: a process that ends with CloseForExit leaves a small
// WAL in place and a large one checkpointed away, and in both cases the
// next process reads what it committed.
func TestCloseForExit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		size     int
		walAfter bool
	}{
		{"small WAL kept", 4 << 10, true},
		{"large WAL checkpointed", 512 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := helper(t, "exit", dir, tc.size).Run(); err != nil {
				t.Fatalf("helper: %v", err)
			}
			wal := filepath.Join(dir, "blobs.db-wal")
			fi, err := os.Stat(wal)
			if got := err == nil && fi.Size() > 0; got != tc.walAfter {
				t.Fatalf("after the helper exited: WAL present and non-empty = %v (stat: %v), want %v", got, err, tc.walAfter)
			}
			d := openDisk(t, dir)
			want := exitContent(tc.size)
			got, err := d.Get(context.Background(), cas.Sum(want))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Get of the helper's blob: %d bytes, %v; want its %d bytes", len(got), err, len(want))
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(wal); !os.IsNotExist(err) {
				t.Errorf("after Close the WAL is still there (stat: %v)", err)
			}
		})
	}
}
