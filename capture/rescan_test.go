package capture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// rescanAgrees scans f's workspace from cache and checks the result
// against a scan of the same tree with no cache by a fresh Capturer: the
// same manifest, Since exactly the difference from prev (the manifest the
// cache was taken with), Dirs covering every directory whose entries
// changed, and a next cache that holds the fresh scan's entries. It
// returns the result and that next cache.
func rescanAgrees(t *testing.T, f *fixture, cache map[string]checkpoints.StatEntry, prev []checkpoints.ManifestEntry) (ScanResult, map[string]checkpoints.StatEntry) {
	t.Helper()
	res := scanOnce(t, f, cache)
	fresh, err := New(f.c.ws, nil, cas.NewMemory()).Scan(context.Background(), ScanOptions{}, nil, Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(fresh.Manifest.Files, func(a, b checkpoints.ManifestEntry) int { return strings.Compare(a.Path, b.Path) }) {
		t.Fatalf("files not in path order: %v", fresh.Manifest.Files)
	}
	if !slices.Equal(res.Manifest.Files, fresh.Manifest.Files) {
		t.Fatalf("re-scan files\n%v\nwant (a scan without cache)\n%v", res.Manifest.Files, fresh.Manifest.Files)
	}
	if !slices.Equal(res.Manifest.Skips, fresh.Manifest.Skips) {
		t.Fatalf("re-scan skips %v, want %v", res.Manifest.Skips, fresh.Manifest.Skips)
	}
	// Since: what differs from prev.
	was := map[string]checkpoints.ManifestEntry{}
	for _, e := range prev {
		was[e.Path] = e
	}
	var changed []string
	gone := []string{}
	for _, e := range fresh.Manifest.Files {
		if o, ok := was[e.Path]; !ok || o != e {
			changed = append(changed, e.Path)
		}
		delete(was, e.Path)
	}
	for p := range was {
		gone = append(gone, p)
	}
	slices.Sort(gone)
	var gotChanged []string
	for _, e := range res.Manifest.Since.Files {
		gotChanged = append(gotChanged, e.Path)
	}
	if !slices.Equal(gotChanged, changed) || !slices.Equal(res.Manifest.Since.Gone, gone) {
		t.Fatalf("since: changed %q gone %q; want %q and %q", gotChanged, res.Manifest.Since.Gone, changed, gone)
	}
	next := cacheOf(t, cache, res)
	want := map[string]checkpoints.StatEntry{}
	for _, s := range statsOf(t, fresh) {
		want[s.Path] = s
	}
	if len(next) != len(want) {
		t.Fatalf("next cache holds %d entries, want %d", len(next), len(want))
	}
	for p, w := range want {
		g, ok := next[p]
		g.Checked, w.Checked = 0, 0
		if !ok || g != w {
			t.Fatalf("next cache %s: %+v, want %+v", p, g, w)
		}
	}
	// Dirs: every directory of a path whose entry is new, changed or gone.
	for p := range next {
		if o, ok := cache[p]; !ok || o != next[p] {
			if d := filepath.ToSlash(filepath.Dir(p)); !res.Dirs[strings.TrimPrefix(d, ".")] {
				t.Fatalf("%s changed in the cache but dirs %v lack its directory", p, res.Dirs)
			}
		}
	}
	for p := range cache {
		if _, ok := next[p]; !ok {
			if d := filepath.ToSlash(filepath.Dir(p)); !res.Dirs[strings.TrimPrefix(d, ".")] {
				t.Fatalf("%s left the cache but dirs %v lack its directory", p, res.Dirs)
			}
		}
	}
	if res.CacheUnchanged != (len(res.Dirs) == 0) {
		t.Fatalf("CacheUnchanged %v with dirs %v", res.CacheUnchanged, res.Dirs)
	}
	return res, next
}

// TestRescanSeesEveryChange settles a tree, then makes one kind of change
// at a time and checks that a re-scan from the cache finds what a scan
// without one finds: content edits that keep size and mtime, mode and
// type changes (file, directory, symlink), files added or removed in
// ignored and not ignored directories, rules that change.
func TestRescanSeesEveryChange(t *testing.T) {
	t.Parallel()
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		change func(t *testing.T, f *fixture)
	}{
		{"nothing", func(t *testing.T, f *fixture) {}},
		{"same size and mtime", func(t *testing.T, f *fixture) {
			f.write(t, "a/one.txt", "ONE", 0o644)
			os.Chtimes(filepath.Join(f.root, "a/one.txt"), old, old)
		}},
		{"mode", func(t *testing.T, f *fixture) { os.Chmod(filepath.Join(f.root, "a/one.txt"), 0o755) }},
		{"file to directory", func(t *testing.T, f *fixture) {
			os.Remove(filepath.Join(f.root, "a/one.txt"))
			f.write(t, "a/one.txt/inner", "i", 0o644)
		}},
		{"directory to file", func(t *testing.T, f *fixture) {
			os.RemoveAll(filepath.Join(f.root, "a/b"))
			f.write(t, "a/b", "now a file", 0o644)
		}},
		{"file to symlink", func(t *testing.T, f *fixture) {
			os.Remove(filepath.Join(f.root, "a/one.txt"))
			os.Symlink("two.txt", filepath.Join(f.root, "a/one.txt"))
		}},
		{"directory to symlink", func(t *testing.T, f *fixture) {
			os.RemoveAll(filepath.Join(f.root, "a/b"))
			os.Symlink("..", filepath.Join(f.root, "a/b"))
		}},
		{"removed file", func(t *testing.T, f *fixture) { os.Remove(filepath.Join(f.root, "a/b/deep.txt")) }},
		{"removed directory", func(t *testing.T, f *fixture) { os.RemoveAll(filepath.Join(f.root, "a")) }},
		{"new file", func(t *testing.T, f *fixture) { f.write(t, "a/b/new.txt", "n", 0o644) }},
		{"new file in a new directory", func(t *testing.T, f *fixture) { f.write(t, "a/c/d/new.txt", "n", 0o644) }},
		{"new file in an ignored directory", func(t *testing.T, f *fixture) { f.write(t, "build/new.txt", "n", 0o644) }},
		{"new ignored file", func(t *testing.T, f *fixture) { f.write(t, "a/new.log", "n", 0o644) }},
		{"rules now ignore a file", func(t *testing.T, f *fixture) { f.write(t, ".gitignore", "build/\n*.log\ntwo.txt\n", 0o644) }},
		{"rules no longer ignore", func(t *testing.T, f *fixture) { f.write(t, ".gitignore", "*.log\n", 0o644) }},
		{"rules in a subdirectory", func(t *testing.T, f *fixture) { f.write(t, "a/b/.gitignore", "deep.txt\n", 0o644) }},
		{"rename within a directory", func(t *testing.T, f *fixture) {
			os.Rename(filepath.Join(f.root, "a/one.txt"), filepath.Join(f.root, "a/zero.txt"))
		}},
		{"names that sort around a directory", func(t *testing.T, f *fixture) {
			f.write(t, "a/b.txt", "dot sorts before slash", 0o644)
			f.write(t, "a/b0", "zero sorts after slash", 0o644)
			f.write(t, "a/b-", "dash sorts before slash", 0o644)
		}},
		{"file over the size limit", func(t *testing.T, f *fixture) {
			f.write(t, "a/one.txt", strings.Repeat("x", DefaultMaxFileSize+1), 0o644)
		}},
		{"fifo where a file was", func(t *testing.T, f *fixture) {
			os.Remove(filepath.Join(f.root, "a/one.txt"))
			if out, err := exec.Command("mkfifo", filepath.Join(f.root, "a/one.txt")).CombinedOutput(); err != nil {
				t.Skipf("mkfifo: %v %s", err, out)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			for _, p := range []string{"a/one.txt", "a/two.txt", "a/b/deep.txt", "a/b/more.txt", "top.txt", "build/out.bin", "x.log"} {
				f.write(t, p, p, 0o644)
			}
			f.write(t, ".gitignore", "build/\n*.log\n", 0o644)
			filepath.Walk(f.root, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
			first := scanOnce(t, f, nil)
			cache := cacheOf(t, nil, first)
			// Settled: a re-scan changes nothing.
			if res, _ := rescanAgrees(t, f, cache, first.Manifest.Files); !res.CacheUnchanged || res.Read != 0 {
				t.Fatalf("settled re-scan: read %d, unchanged %v", res.Read, res.CacheUnchanged)
			}
			c.change(t, f)
			res, next := rescanAgrees(t, f, cache, first.Manifest.Files)
			// And the cache it leaves serves the scan after it.
			rescanAgrees(t, f, next, res.Manifest.Files)
		})
	}
}

// TestRescanRandomTrees applies random changes to a tree, round after
// round, each re-scan starting from the cache the previous one left, and
// checks every re-scan against a scan without cache.
func TestRescanRandomTrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 1))
	f := newFixture(t)
	dirs := []string{"", "a", "a/b", "a/b/c", "a.d", "a0", "z"}
	names := []string{"f", "g.txt", "a", "b", "a.x", "b0", "b-", "c"}
	pick := func() string {
		d, n := dirs[rng.IntN(len(dirs))], names[rng.IntN(len(names))]
		if d == "" {
			return n
		}
		return d + "/" + n
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var cache map[string]checkpoints.StatEntry
	var prev []checkpoints.ManifestEntry
	for round := range 30 {
		for range 1 + rng.IntN(6) {
			p := filepath.Join(f.root, pick())
			switch rng.IntN(6) {
			case 0, 1: // write a file, making its parents (a file in the way is removed)
				for d := filepath.Dir(p); d != f.root; d = filepath.Dir(d) {
					if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
						os.Remove(d)
					}
				}
				os.RemoveAll(p)
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(fmt.Sprint(round, rng.IntN(3))), 0o644)
				if rng.IntN(2) == 0 {
					os.Chtimes(p, old, old)
				}
			case 2:
				os.RemoveAll(p)
			case 3:
				os.Chmod(p, 0o700)
			case 4:
				os.RemoveAll(p)
				os.Symlink("f", p)
			case 5:
				os.WriteFile(filepath.Join(f.root, ".gitignore"), []byte(names[rng.IntN(len(names))]+"\n"), 0o644)
			}
		}
		var res ScanResult
		if cache == nil {
			res = scanOnce(t, f, nil)
			cache = cacheOf(t, nil, res)
		} else {
			res, cache = rescanAgrees(t, f, cache, prev)
		}
		prev = res.Manifest.Files
	}
}

// TestRescanRacyEntry: an entry whose file was stat'ed within RacyWindow
// of its mtime cannot vouch for the content, so the file is read again
// even though its stat is unchanged; an entry stat'ed long after its
// mtime is trusted. The cache's blob stands in for content that changed
// without changing the stat (a write in the same clock tick).
func TestRescanRacyEntry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	f.write(t, "d/same.txt", "content", 0o644)
	os.Chtimes(filepath.Join(f.root, "d/same.txt"), old, old)
	cache := cacheOf(t, nil, scanOnce(t, f, nil))
	e := cache["d/same.txt"]
	stale := cas.Sum([]byte("what the file held at the stat"))
	e.Blob = stale
	e.Checked = e.MTime + int64(checkpoints.RacyWindow)/2 // stat'ed just after the write: racy
	cache[e.Path] = e
	res := scanOnce(t, f, cache)
	if res.Read != 1 || res.Manifest.Files[0].Blob == stale || len(res.Manifest.Since.Files) != 1 {
		t.Fatalf("racy entry: read %d, since %v; want the file read again and found changed", res.Read, res.Manifest.Since.Files)
	}
	e.Checked = e.MTime + 2*int64(checkpoints.RacyWindow)
	cache[e.Path] = e
	if res := scanOnce(t, f, cache); res.Read != 0 || res.Manifest.Files[0].Blob != stale {
		t.Fatalf("entry stat'ed well after its mtime: read %d, want it trusted", res.Read)
	}
}
