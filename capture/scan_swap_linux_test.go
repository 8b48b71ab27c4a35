//go:build linux

package capture

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// TestScanSwapRace scans, over and over and from each scan's stat cache,
// a workspace whose directory d is swapped (renameat2 RENAME_EXCHANGE),
// between any listing and any open, for a symlink to a directory outside
// the workspace, a regular file, or another directory of the workspace,
// and back. A listing learns that d is a directory from its file type
// alone and opens it with O_NOFOLLOW|O_DIRECTORY (scanDir.list, openDir),
// so the swap can land between the two.
//
// No scan may fail, none may record the bytes of an outside file, and
// every path recorded under d must hold what d or the swapped-in
// directory held. Once the swaps stop, a scan from the last cache must
// record exactly the tree, as a scan without a cache does.
//
// 300 scans; CKPT_LONG=1 runs 3,000.
func TestScanSwapRace(t *testing.T) {
	t.Parallel()
	scans := 300
	if os.Getenv("CKPT_LONG") != "" {
		scans = 3000
	}
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	names := []string{"f0", "f1", "f2", "sub/g0", "sub/g1", "sub/deeper/h0"}
	outsideIDs := map[cas.ID]string{}
	allowed := map[string]map[cas.ID]bool{} // path under d -> contents it may have
	for _, n := range names {
		b := make([]byte, 48)
		rand.Read(b)
		writeFile(t, filepath.Join(outside, n), string(b))
		outsideIDs[cas.Sum(b)] = n
		allowed[n] = map[cas.ID]bool{}
		for _, dir := range []string{"d", ".git/alt"} {
			content := dir + " " + n + "\n"
			writeFile(t, filepath.Join(ws, dir, n), content)
			allowed[n][cas.Sum([]byte(content))] = true
		}
	}
	writeFile(t, filepath.Join(ws, "top"), "top\n")
	writeFile(t, filepath.Join(ws, "other", "o"), "other\n")
	writeFile(t, filepath.Join(ws, ".git", "file"), "a file\n")
	allowed["."] = map[cas.ID]bool{cas.Sum([]byte("a file\n")): true} // d itself, when the file is swapped in
	if err := os.Symlink(outside, filepath.Join(ws, ".git", "link")); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	var stop atomic.Bool
	var swaps [3]atomic.Int64
	done := make(chan error, 1)
	go func() {
		rng := mrand.New(mrand.NewPCG(5, 6))
		d := filepath.Join(ws, "d")
		partners := []string{"link", "file", "alt"}
		for !stop.Load() {
			i := rng.IntN(len(partners))
			p := filepath.Join(ws, ".git", partners[i])
			err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, d, unix.RENAME_EXCHANGE)
			if err == nil {
				spin(rng.IntN(20))
				err = unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, d, unix.RENAME_EXCHANGE)
			}
			if err != nil {
				done <- fmt.Errorf("swap with %s: %w", partners[i], err)
				return
			}
			swaps[i].Add(1)
			spin(rng.IntN(50))
		}
		done <- nil
	}()

	c := New(w, nil, cas.NewMemory())
	scan := func(cache map[string]checkpoints.StatEntry) ScanResult {
		t.Helper()
		var sc *checkpoints.ScanCache
		if cache != nil {
			sc = checkpoints.NewScanCache(slices.Collect(maps.Values(cache)))
		}
		res, err := c.Scan(context.Background(), ScanOptions{}, sc, Hash)
		if err != nil {
			stop.Store(true)
			<-done
			t.Fatalf("scan: %v", err)
		}
		return res
	}
	var cache map[string]checkpoints.StatEntry
	var partial, whole, bad int
	for range scans {
		if t.Failed() {
			break
		}
		res := scan(cache)
		cache = cacheOf(t, cache, res)
		underD := 0
		for _, f := range res.Manifest.Files {
			if n, ok := outsideIDs[f.Blob]; ok {
				bad++
				t.Errorf("%s recorded with the bytes of outside/%s", f.Path, n)
			}
			rel, ok := strings.CutPrefix(f.Path, "d/")
			if f.Path == "d" {
				rel, ok = ".", true
			}
			if !ok {
				continue
			}
			underD++
			if !allowed[rel][f.Blob] {
				bad++
				t.Errorf("%s recorded with content neither d nor the swapped-in directory had", f.Path)
			}
		}
		if underD == len(names) {
			whole++
		} else {
			partial++
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	final := scan(cache)
	fresh, err := New(w, nil, cas.NewMemory()).Scan(context.Background(), ScanOptions{}, nil, Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(final.Manifest.Files, fresh.Manifest.Files) {
		t.Errorf("after the swaps, a scan from the cache recorded\n%v\nwant (a scan without one)\n%v", final.Manifest.Files, fresh.Manifest.Files)
	}
	if got, want := len(fresh.Manifest.Files), len(names)+2; got != want {
		t.Errorf("the final scan recorded %d files, want %d", got, want)
	}
	for _, f := range fresh.Manifest.Files {
		if rel, ok := strings.CutPrefix(f.Path, "d/"); ok && f.Blob != cas.Sum([]byte("d "+rel+"\n")) {
			t.Errorf("the final scan recorded %s with content d does not hold", f.Path)
		}
	}
	t.Logf("%d scans (%d saw all of d, %d part or none of it); swaps with the symlink %d, the file %d, the directory %d; %d bad records",
		whole+partial, whole, partial, swaps[0].Load(), swaps[1].Load(), swaps[2].Load(), bad)
}

// spin waits about n microseconds without sleeping (a sleep would round
// up to the scheduler's tick and make the swaps rare).
func spin(n int) {
	end := time.Now().Add(time.Duration(n) * time.Microsecond)
	for time.Now().Before(end) {
	}
}

// removeOnMatch is a Matcher that ignores nothing and, when asked about
// the path at, removes the directory gone (once).
type removeOnMatch struct {
	root, at, gone string
	done           atomic.Bool
}

func (m *removeOnMatch) Match(rel string, isDir bool) (bool, error) {
	if rel == m.at && m.done.CompareAndSwap(false, true) {
		if err := os.RemoveAll(filepath.Join(m.root, m.gone)); err != nil {
			return false, err
		}
	}
	return false, nil
}

// TestScanDirRemovedAfterOpen removes a directory after the scan opened it
// and before it is listed: the walk opens the subdirectory a, hands it to
// a goroutine of its own, and asks about its sibling b, which removes a.
// With one P the goroutine has not listed a by then, so its listing meets
// a deleted directory (getdents fails with ENOENT). a is gone, as if it
// had been removed a moment before the scan: the scan must not fail (a
// turn's scan failing fails the turn), and its cache must say a's files
// are gone, so the next scan records the tree as a scan without one does.
func TestScanDirRemovedAfterOpen(t *testing.T) {
	t.Parallel()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	hits := 0
	for _, cached := range []bool{false, true} {
		for range 10 {
			ws := t.TempDir()
			writeFile(t, filepath.Join(ws, "a", "x"), "x\n")
			writeFile(t, filepath.Join(ws, "a", "sub", "z"), "z\n")
			writeFile(t, filepath.Join(ws, "b", "y"), "y\n")
			w, err := NewWorkspace(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c := New(w, nil, cas.NewMemory())
			var cache map[string]checkpoints.StatEntry
			var sc *checkpoints.ScanCache
			if cached {
				res, err := c.Scan(context.Background(), ScanOptions{}, nil, Hash)
				if err != nil {
					t.Fatal(err)
				}
				cache = cacheOf(t, nil, res)
				sc = checkpoints.NewScanCache(slices.Collect(maps.Values(cache)))
			}
			m := &removeOnMatch{root: ws, at: "b", gone: "a"}
			res, err := c.Scan(context.Background(), ScanOptions{Ignore: m}, sc, Hash)
			if err != nil {
				t.Fatalf("scan (cache %v): %v", cached, err)
			}
			var got []string
			for _, f := range res.Manifest.Files {
				got = append(got, f.Path)
			}
			switch {
			case slices.Equal(got, []string{"b/y"}):
				hits++ // a was gone when listed
			case slices.Equal(got, []string{"a/sub/z", "a/x", "b/y"}):
				// a was listed before b was asked about
			case len(got) == 2 && got[1] == "b/y" && (got[0] == "a/sub/z" || got[0] == "a/x"):
				// RemoveAll was part way: the removal runs system calls,
				// which let the listing goroutine run with the one P
			default:
				t.Fatalf("scan (cache %v) recorded %q, want b/y with or without a's files", cached, got)
			}
			next, err := c.Scan(context.Background(), ScanOptions{}, checkpoints.NewScanCache(slices.Collect(maps.Values(cacheOf(t, cache, res)))), Hash)
			if err != nil {
				t.Fatal(err)
			}
			if len(next.Manifest.Files) != 1 || next.Manifest.Files[0].Path != "b/y" {
				t.Errorf("the next scan (cache %v) recorded %v, want b/y alone", cached, next.Manifest.Files)
			}
		}
	}
	t.Logf("a removed before its listing in %d of 20 scans", hits)
}
