package cas_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/cas/castest"
)

// TestDiskBigFile: a file of many MiB, which Put compresses with the
// parallel encoder because it can see its size, reads back verified, is
// compressed, and deduplicates.
func TestDiskBigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := openDisk(t, dir)
	defer d.Close()
	content := castest.Bytes(21, 20<<20+12345)
	path := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	put := func() cas.ID {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		id, n, err := d.Put(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		if id != cas.Sum(content) || n != int64(len(content)) {
			t.Fatalf("Put = %s, %d; want %s, %d", id.Short(), n, cas.Sum(content).Short(), len(content))
		}
		return id
	}
	id := put()
	castest.Check(t, d, id, content)
	info, err := d.Stat(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Stored*2 > info.Size {
		t.Errorf("stored %d of %d bytes: want it compressed", info.Stored, info.Size)
	}
	fi, err := os.Stat(objectPath(dir, id))
	if err != nil || fi.Size() != info.Stored {
		t.Errorf("object file: %v, %v; want %d bytes", fi, err, info.Stored)
	}
	put()
	if ids := castest.IDs(t, d); len(ids) != 1 {
		t.Errorf("%d blobs after putting the same file twice, want 1", len(ids))
	}
}
