//go:build linux || darwin || freebsd

package controller_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// allocated returns the bytes the file at p takes on disk.
func allocated(t testing.TB, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// TestSparseFileComesBackSparse rewinds a 64 MiB file that holds 8 KiB
// of data in its middle and holes around it: the restored file has the
// same bytes and takes about its data on disk, not its size. It used to
// come back dense (a 5 GiB sparse file took 5.1 GB and the rewind ran
// past ten minutes writing zeros).
func TestSparseFileComesBackSparse(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := filepath.Join(e.ws, "disk.img")
	const size, at = 64 << 20, 32 << 20
	data := bytes.Repeat([]byte("data"), 2048)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(data, at)
	if err == nil {
		err = f.Truncate(size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if a := allocated(t, p); a >= size/2 {
		t.Skipf("the file system keeps no holes: a sparse %d-byte file takes %d", size, a)
	}
	e.turn("t0")
	if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{"disk.img"}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	e.write("disk.img", "replaced")
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	copy(want[at:], data)
	if !bytes.Equal(got, want) {
		t.Fatalf("restored %d bytes, not the %d captured", len(got), size)
	}
	if a := allocated(t, p); a > 1<<20 {
		t.Errorf("the restored file takes %d bytes on disk for %d of data (size %d): it came back dense", a, len(data), size)
	}
}

// BenchmarkSparseRewind restores a 1 GiB file holding 1 MiB of data (an
// undo between rounds, untimed, puts the edit back): the time goes to
// reading and verifying the blob, not to writing zeros.
func BenchmarkSparseRewind(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b)
	p := filepath.Join(e.ws, "disk.img")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	_, err = f.WriteAt(bytes.Repeat([]byte("data"), 256<<10), 512<<20)
	if err == nil {
		err = f.Truncate(1 << 30)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	e.turn("t0")
	if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{"disk.img"}}); errs[0] != nil {
		b.Fatal(errs[0])
	}
	e.write("disk.img", "replaced")
	b.ResetTimer()
	for range b.N {
		if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeCode, controller.RewindOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if a := allocated(b, p); a > 4<<20 {
			b.Fatalf("the restored file takes %d bytes on disk", a)
		}
		if _, err := e.c.Undo(ctx, controller.RewindOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
