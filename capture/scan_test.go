package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
)

func scanOnce(t *testing.T, f *fixture, cache map[string]checkpoints.StatEntry) ScanResult {
	t.Helper()
	res, err := f.c.Scan(context.Background(), ScanOptions{}, cache, Hash)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func cacheOf(res ScanResult) map[string]checkpoints.StatEntry {
	m := map[string]checkpoints.StatEntry{}
	for _, s := range res.Stats {
		m[s.Path] = s
	}
	return m
}

func TestScanStatCacheAndRacyRule(t *testing.T) {
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
	second := scanOnce(t, f, cacheOf(first))
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
	third := scanOnce(t, f, cacheOf(second))
	if third.Read != 1 || third.Manifest.Files[0].Blob == first.Manifest.Files[0].Blob {
		t.Fatalf("a same-size edit with its mtime restored went unseen (read %d)", third.Read)
	}
	// A file modified just now is racy: its entry cannot vouch for it, so
	// the next scan reads it again even if the stat looks the same.
	f.write(t, "fresh.txt", "x", 0o644)
	fourth := scanOnce(t, f, cacheOf(third))
	fifth := scanOnce(t, f, cacheOf(fourth))
	if fifth.Read != 1 {
		t.Errorf("rescan read %d files, want 1 (the racy fresh.txt)", fifth.Read)
	}
}

func TestScanEmptyAndSymlinkLoops(t *testing.T) {
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
	case <-time.After(30 * time.Second):
		t.Fatal("scan with symlink loops did not finish")
	}
}

func TestScanSkipsBigFilesAndCrowdedDirs(t *testing.T) {
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
	f := newFixture(t)
	for i := 0; i < 50; i++ {
		f.write(t, filepath.Join("d", string(rune('a'+i%26)), "f"+string(rune('a'+i/26))), "x", 0o644)
	}
	_, err := f.c.Scan(context.Background(), ScanOptions{Budget: time.Nanosecond}, nil, Hash)
	if !errors.Is(err, ErrScanBudget) {
		t.Fatalf("scan past its budget: %v, want ErrScanBudget", err)
	}
}
