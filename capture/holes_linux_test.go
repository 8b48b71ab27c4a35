package capture

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// bytesRead returns the bytes this process has read with read system
// calls (/proc/self/io's rchar).
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// TestSparseCaptureReadsItsData hashes sparse files whose data sits at
// their start, middle and end: the content and its hash are those of the
// whole file, holes read as zeros, and capturing a 256 MiB file with 12
// KiB of data reads about its data, not its size. It does not run in
// parallel: /proc/self/io counts every goroutine's reads, and another
// test's reads in the window were counted as the capture's in CI.
func TestSparseCaptureReadsItsData(t *testing.T) {
	f := newFixture(t)
	const size = 256 << 20
	data := bytes.Repeat([]byte("sparse!!"), 512)
	path := filepath.Join(f.root, "disk.img")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{0, size / 2, size - int64(len(data))} {
		if _, err := w.WriteAt(data, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Sys().(*syscall.Stat_t).Blocks*512 >= size/2 {
		t.Skip("the file system keeps no holes")
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := cas.SumReader(bytes.NewReader(whole))
	before := bytesRead(t)
	st, err := f.c.StateWith(context.Background(), "disk.img", Hash)
	read := bytesRead(t) - before
	if err != nil {
		t.Fatal(err)
	}
	if st.Content == nil || *st.Content != want || st.Size != size {
		t.Fatalf("state %v, size %d; want the whole file's hash %s, size %d", st.Content, st.Size, want.Short(), size)
	}
	if read > 4<<20 {
		t.Errorf("hashing read %d bytes of a %d-byte file holding %d of data", read, size, 3*len(data))
	}
}
