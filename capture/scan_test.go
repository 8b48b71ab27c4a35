package capture

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

func scanOnce(t *testing.T, f *fixture, cache map[string]checkpoints.StatEntry) ScanResult {
	t.Helper()
	var sc *checkpoints.ScanCache
	if cache != nil {
		sc = checkpoints.NewScanCache(slices.Collect(maps.Values(cache)))
	}
	res, err := f.c.Scan(context.Background(), ScanOptions{}, sc, Hash)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// cacheOf returns the stat cache a scan that started from prev leaves:
// its entries for the directories it changed (all when res.Dirs is nil),
// prev's for the others.
func cacheOf(t testing.TB, prev map[string]checkpoints.StatEntry, res ScanResult) map[string]checkpoints.StatEntry {
	t.Helper()
	m := map[string]checkpoints.StatEntry{}
	if res.Dirs != nil {
		for p, e := range prev {
			if !res.Dirs[path.Dir("/" + p)[1:]] {
				m[p] = e
			}
		}
	}
	for _, s := range statsOf(t, res) {
		m[s.Path] = s
	}
	return m
}

// statsOf returns res's stat entries, checking how the scan handed them
// over: by directory, each directory's sorted by path, none empty, and,
// when Dirs is not nil, only directories it names.
func statsOf(t testing.TB, res ScanResult) []checkpoints.StatEntry {
	t.Helper()
	var out []checkpoints.StatEntry
	for d, es := range res.Stats {
		if len(es) == 0 {
			t.Fatalf("stats: directory %q handed over with no entries", d)
		}
		if res.Dirs != nil && !res.Dirs[d] {
			t.Fatalf("stats: directory %q is not in dirs %v", d, res.Dirs)
		}
		for i, e := range es {
			if got := strings.TrimPrefix(path.Dir("/"+e.Path), "/"); got != d {
				t.Fatalf("stats: %s handed over under directory %q", e.Path, d)
			}
			if i > 0 && es[i-1].Path >= e.Path {
				t.Fatalf("stats of %q not sorted: %s then %s", d, es[i-1].Path, e.Path)
			}
		}
		out = append(out, es...)
	}
	return out
}

func TestScanStatCacheAndRacyRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"a.txt", "sub/b.txt"} {
		f.write(t, n, "0123456789", 0o644)
		if err := os.Chtimes(filepath.Join(f.root, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	first := scanOnce(t, f, nil)
	if first.Read != 2 || len(first.Manifest.Files) != 2 {
		t.Fatalf("first scan read %d of %d files, want 2 of 2", first.Read, len(first.Manifest.Files))
	}
	c1 := cacheOf(t, nil, first)
	second := scanOnce(t, f, c1)
	if second.Read != 0 || second.Reused != 2 {
		t.Fatalf("unchanged rescan read %d, reused %d; want 0 and 2", second.Read, second.Reused)
	}
	// Same size, old mtime put back: ctime still tells.
	p := filepath.Join(f.root, "a.txt")
	if err := os.WriteFile(p, []byte("9876543210"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	c2 := cacheOf(t, c1, second)
	third := scanOnce(t, f, c2)
	if third.Read != 1 || third.Manifest.Files[0].Blob == first.Manifest.Files[0].Blob {
		t.Fatalf("a same-size edit with its mtime restored went unseen (read %d)", third.Read)
	}
	// A file modified just now is racy: its entry cannot vouch for it, so
	// the next scan reads it again even if the stat looks the same. Its
	// mtime is set an hour ahead: "just now" for as long as the test runs,
	// where a loaded machine's pause of RacyWindow between the write and
	// the scan's stat would otherwise age it into a vouching entry.
	f.write(t, "fresh.txt", "x", 0o644)
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(f.root, "fresh.txt"), ahead, ahead); err != nil {
		t.Fatal(err)
	}
	c3 := cacheOf(t, c2, third)
	fourth := scanOnce(t, f, c3)
	fifth := scanOnce(t, f, cacheOf(t, c3, fourth))
	if fifth.Read != 1 {
		t.Errorf("rescan read %d files, want 1 (the racy fresh.txt)", fifth.Read)
	}
}

func TestScanEmptyAndSymlinkLoops(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if res := scanOnce(t, f, nil); len(res.Manifest.Files) != 0 || len(res.Manifest.Skips) != 0 {
		t.Fatalf("empty workspace: %+v", res.Manifest)
	}
	os.Mkdir(filepath.Join(f.root, "d"), 0o755)
	os.Symlink(".", filepath.Join(f.root, "d", "loop"))
	os.Symlink("../d", filepath.Join(f.root, "d", "up"))
	os.Symlink("/", filepath.Join(f.root, "root"))
	f.write(t, "d/real.txt", "r", 0o644)
	done := make(chan ScanResult, 1)
	go func() { done <- scanOnce(t, f, nil) }()
	select {
	case res := <-done:
		if len(res.Manifest.Files) != 1 || res.Manifest.Files[0].Path != "d/real.txt" {
			t.Errorf("files = %+v, want only d/real.txt (symlinks are not followed)", res.Manifest.Files)
		}
	case <-time.After(2 * time.Minute): // a safety net for a loaded machine; the scan takes milliseconds
		t.Fatal("scan with symlink loops did not finish")
	}
}

func TestScanSkipsBigFilesAndCrowdedDirs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(t, "big.bin", string(make([]byte, 2048)), 0o644)
	for i := 0; i < 6; i++ {
		f.write(t, filepath.Join("crowd", string(rune('a'+i))), "x", 0o644)
	}
	f.write(t, "ok.txt", "fine", 0o644)
	res, err := f.c.Scan(context.Background(), ScanOptions{MaxFileSize: 1024, MaxDirEntries: 5}, nil, Hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifest.Files) != 1 || res.Manifest.Files[0].Path != "ok.txt" {
		t.Errorf("files = %+v, want only ok.txt", res.Manifest.Files)
	}
	if len(res.Manifest.Skips) != 2 || res.Manifest.Skips[0].Path != "big.bin" || res.Manifest.Skips[1].Path != "crowd" {
		t.Errorf("skips = %+v, want big.bin and crowd", res.Manifest.Skips)
	}
}

func TestScanBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := 0; i < 50; i++ {
		f.write(t, filepath.Join("d", string(rune('a'+i%26)), "f"+string(rune('a'+i/26))), "x", 0o644)
	}
	_, err := f.c.Scan(context.Background(), ScanOptions{Budget: time.Nanosecond}, nil, Hash)
	if !errors.Is(err, ErrScanBudget) {
		t.Fatalf("scan past its budget: %v, want ErrScanBudget", err)
	}
}

// TestScanAgreesWithMatch checks the walk's per-directory rule loading
// against Ignore.Match by path, on every layout of the git corpus: the
// files a scan records are exactly the regular files a walk asking Match
// keeps.
func TestScanAgreesWithMatch(t *testing.T) {
	t.Parallel()
	for _, c := range append(slices.Clone(gitCorpus), generatedCorpus()...) {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			buildIgnoreLayout(t, root, c)
			ws, err := NewWorkspace(root)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			res, err := New(ws, nil, cas.NewMemory()).Scan(context.Background(), ScanOptions{}, nil, Hash)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range res.Manifest.Files {
				got = append(got, f.Path)
			}
			var want []string
			for _, p := range walkIgnore(t, NewIgnore(root), root, "") {
				if fi, err := os.Lstat(filepath.Join(root, p)); err == nil && fi.Mode().IsRegular() {
					want = append(want, p)
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("scan recorded %q, Match keeps %q", got, want)
			}
		})
	}
}

// TestScanWideTree walks many directories at once (the walk is parallel
// per directory) and finds every file once, sorted, with the right reuse
// counts on a re-scan.
func TestScanWideTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 60 {
		for j := range 5 {
			rel := fmt.Sprintf("d%02d/e%d/f%d.txt", i, j%3, j)
			f.write(t, rel, rel, 0o644)
			if err := os.Chtimes(filepath.Join(f.root, rel), old, old); err != nil {
				t.Fatal(err)
			}
			want = append(want, rel)
		}
	}
	slices.Sort(want)
	var calls []int
	res, err := f.c.Scan(context.Background(), ScanOptions{Progress: func(n int) { calls = append(calls, n) }}, nil, Hash)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Manifest.Files {
		got = append(got, e.Path)
		if e.Size != int64(len(e.Path)) {
			t.Errorf("%s: size %d, want %d", e.Path, e.Size, len(e.Path))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan found %d files %q, want %d", len(got), got, len(want))
	}
	if !slices.Equal(calls, []int{256}) {
		t.Errorf("progress calls %v for %d files", calls, len(want))
	}
	again := scanOnce(t, f, cacheOf(t, nil, res))
	if again.Read != 0 || again.Reused != len(want) {
		t.Errorf("re-scan read %d, reused %d; want 0 and %d", again.Read, again.Reused, len(want))
	}
}

// TestScanReusesUnchangedRules: a second scan by the same Capturer does
// not read a .gitignore whose stat is unchanged (and not racy), and does
// read one that changed.
func TestScanReusesUnchangedRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	f.write(t, "sub/.gitignore", "*.o\n", 0o644)
	f.write(t, "sub/a.o", "o", 0o644)
	f.write(t, "sub/a.c", "c", 0o644)
	gi := filepath.Join(f.root, "sub", ".gitignore")
	if err := os.Chtimes(gi, old, old); err != nil {
		t.Fatal(err)
	}
	files := func(res ScanResult) []string {
		var out []string
		for _, e := range res.Manifest.Files {
			out = append(out, e.Path)
		}
		return out
	}
	first := scanOnce(t, f, nil)
	if got := files(first); !slices.Equal(got, []string{"sub/.gitignore", "sub/a.c"}) {
		t.Fatalf("first scan: %q", got)
	}
	parsed := f.c.rules["sub/.gitignore"].rules
	if parsed == nil {
		t.Fatal("the scan kept no parsed rules for sub/.gitignore")
	}
	scanOnce(t, f, nil)
	if f.c.rules["sub/.gitignore"].rules != parsed {
		t.Error("an unchanged .gitignore was parsed again")
	}
	// Changed: new rules apply at once, whatever its mtime.
	if err := os.WriteFile(gi, []byte("*.c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(gi, old, old); err != nil {
		t.Fatal(err)
	}
	if got := files(scanOnce(t, f, nil)); !slices.Equal(got, []string{"sub/.gitignore", "sub/a.o"}) {
		t.Errorf("after the rules changed: %q, want sub/.gitignore and sub/a.o", got)
	}
}

// TestScanRuleFileKinds: a symlinked .gitignore is not followed and a
// directory named .gitignore holds no rules.
func TestScanRuleFileKinds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(t, "sub/.gitignore", "*.o\n", 0o644)
	f.write(t, "sub/a.o", "o", 0o644)
	f.write(t, "link/a.o", "o", 0o644)
	f.write(t, "outside-rules", "*\n", 0o644)
	if err := os.Symlink("../outside-rules", filepath.Join(f.root, "link", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	res := scanOnce(t, f, nil)
	var got []string
	for _, e := range res.Manifest.Files {
		got = append(got, e.Path)
	}
	if want := []string{"link/a.o", "outside-rules", "sub/.gitignore"}; !slices.Equal(got, want) {
		t.Errorf("files %q, want %q (a symlinked .gitignore is not followed)", got, want)
	}
	if err := os.Remove(filepath.Join(f.root, "sub", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.root, "sub", ".gitignore"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory named .gitignore holds no rules: sub/a.o is kept.
	res = scanOnce(t, f, nil)
	found := false
	for _, e := range res.Manifest.Files {
		found = found || e.Path == "sub/a.o"
	}
	if !found {
		t.Error("sub/a.o missing once .gitignore is a directory")
	}
}

// TestScanCacheUnchanged: CacheUnchanged is set exactly when the scan's
// stat entries are the cache it was given.
func TestScanCacheUnchanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"a", "b/c"} {
		f.write(t, n, n, 0o644)
		if err := os.Chtimes(filepath.Join(f.root, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	first := scanOnce(t, f, nil)
	if first.CacheUnchanged {
		t.Error("a first scan reports its (empty) cache unchanged")
	}
	c1 := cacheOf(t, nil, first)
	second := scanOnce(t, f, c1)
	if !second.CacheUnchanged {
		t.Error("an unchanged re-scan reports the cache changed")
	}
	// A cache entry for a file that is gone: the cache changes.
	cache := cacheOf(t, c1, second)
	cache["gone"] = checkpoints.StatEntry{Path: "gone"}
	if scanOnce(t, f, cache).CacheUnchanged {
		t.Error("a scan that dropped a cache entry reports the cache unchanged")
	}
}

// TestScanSince: a re-scan reports how its files differ from the cache it
// was given: files edited or added, and cache paths gone; a file read
// again with the same content is no change.
func TestScanSince(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"a", "b/c", "b/d", "e"} {
		f.write(t, n, n, 0o644)
		if err := os.Chtimes(filepath.Join(f.root, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	first := scanOnce(t, f, nil)
	if s := first.Manifest.Since; s != nil || first.Dirs != nil {
		t.Fatalf("first scan: since = %+v, dirs %v; want none (no cache to differ from)", s, first.Dirs)
	}
	f.write(t, "b/c", "edited", 0o644)
	f.write(t, "new", "n", 0o644)
	if err := os.Remove(filepath.Join(f.root, "b", "d")); err != nil {
		t.Fatal(err)
	}
	// e is read again (its cache entry is racy) but has not changed.
	cache := cacheOf(t, nil, first)
	e := cache["e"]
	e.Checked = e.MTime
	cache["e"] = e
	res := scanOnce(t, f, cache)
	var changed []string
	for _, e := range res.Manifest.Since.Files {
		changed = append(changed, e.Path)
	}
	if !slices.Equal(changed, []string{"b/c", "new"}) || !slices.Equal(res.Manifest.Since.Gone, []string{"b/d"}) {
		t.Errorf("since: changed %q gone %q; want [b/c new] and [b/d]", changed, res.Manifest.Since.Gone)
	}
	if res.Read != 3 {
		t.Errorf("read %d files, want 3 (b/c, new, and the racy e)", res.Read)
	}
	if len(res.Dirs) != 2 || !res.Dirs[""] || !res.Dirs["b"] {
		t.Errorf("dirs %v, want the root and b", res.Dirs)
	}
}
