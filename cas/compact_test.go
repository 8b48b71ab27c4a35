package cas_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// quotaStore puts n distinct 1 MiB blobs (the largest stored inline, in
// 512-byte pages of blobs.db) into a new Disk and deletes all but the
// newest keep, as pruning a store down to a quota does. It returns the
// kept ids and their contents.
func quotaStore(t testing.TB, dir string, n, keep int) (*cas.Disk, []cas.ID, [][]byte) {
	t.Helper()
	ctx := context.Background()
	d := openDisk(t, dir)
	var ids []cas.ID
	var data [][]byte
	for i := range n {
		b := random(uint64(i+1), 1<<20)
		id, _, err := d.Put(ctx, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		data = append(data, b)
	}
	if _, _, err := d.DeleteMany(ctx, ids[:n-keep]); err != nil {
		t.Fatal(err)
	}
	return d, ids[n-keep:], data[n-keep:]
}

func pragma(t testing.TB, dir, name string) int64 {
	t.Helper()
	var v int64
	if err := rawDB(t, dir).QueryRow(`PRAGMA ` + name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCompactKeepsBlobs compacts a blobs.db of which most (one VACUUM
// rewrites the rest) or a minority (one full auto-vacuum commit) is free:
// either way every kept blob reads back, no free page is left, the file
// shrinks to about the live pages and stays in incremental auto-vacuum.
func TestCompactKeepsBlobs(t *testing.T) {
	t.Parallel()
	for _, keep := range []int{3, 9} {
		t.Run(strconv.Itoa(keep), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			d, ids, data := quotaStore(t, dir, 12, keep)
			if free := pragma(t, dir, "freelist_count"); free == 0 {
				t.Fatal("deleting blobs left no free pages: the test proves nothing")
			}
			if err := d.Compact(ctx); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				got, err := d.Get(ctx, id)
				if err != nil || !bytes.Equal(got, data[i]) {
					t.Fatalf("Get %s after Compact: %d bytes, %v; want the %d bytes put", id.Short(), len(got), err, len(data[i]))
				}
			}
			if free := pragma(t, dir, "freelist_count"); free != 0 {
				t.Errorf("freelist_count %d after Compact, want 0", free)
			}
			if mode := pragma(t, dir, "auto_vacuum"); mode != 2 {
				t.Errorf("auto_vacuum %d after Compact, want 2 (incremental)", mode)
			}
			fi, err := os.Stat(dir + "/blobs.db")
			if err != nil {
				t.Fatal(err)
			}
			if live := int64(keep) << 20; fi.Size() > live+live/4 {
				t.Errorf("blobs.db is %d bytes after Compact, want about the %d live", fi.Size(), live)
			}
		})
	}
}

// readCalls returns how many read system calls this process has made
// (/proc/self/io's syscr), or -1 where the kernel does not say.
func readCalls() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// TestCompactWorkIsLinear frees two thirds of a 24 MiB blobs.db. SQLite's
// incremental_vacuum removes each free page at the file's end with a walk
// of the free list, re-reading its trunk pages from disk once they fall
// out of the page cache: 2.3 million reads for these 49,000 pages (43 s
// of CPU for a 60-turn store pruned to 20 MiB). Compact must read each
// page a small number of times. It does not run in parallel: the count
// is the whole process's, and other tests' reads would be counted too.
func TestCompactWorkIsLinear(t *testing.T) {
	if readCalls() < 0 {
		t.Skip("no /proc/self/io: cannot count reads")
	}
	dir := t.TempDir()
	d, _, _ := quotaStore(t, dir, 24, 8)
	pages := pragma(t, dir, "page_count")
	before := readCalls()
	if err := d.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if reads := readCalls() - before; reads > 4*pages {
		t.Errorf("Compact made %d read calls for a %d-page database, want at most %d", reads, pages, 4*pages)
	}
}
