package capture

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dirent64 encodes one linux_dirent64 record, padded to 8 bytes.
func dirent64(ino uint64, typ byte, name string) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b, ino)
	binary.NativeEndian.PutUint16(b[16:], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

func TestAppendNames(t *testing.T) {
	t.Parallel()
	var recs []byte
	for _, r := range []struct {
		ino  uint64
		typ  byte
		name string
	}{{1, unix.DT_DIR, "."}, {2, unix.DT_DIR, ".."}, {3, unix.DT_REG, "a.go"}, {0, unix.DT_REG, "deleted"},
		{4, unix.DT_UNKNOWN, strings.Repeat("x", 255)}, {5, unix.DT_DIR, "b"}} {
		recs = append(recs, dirent64(r.ino, r.typ, r.name)...)
	}
	names, ok := appendNames([]byte("\x08z\x00"), recs)
	if want := "\x08z\x00\x08a.go\x00\x00" + strings.Repeat("x", 255) + "\x00\x04b\x00"; !ok || string(names) != want {
		t.Fatalf("appendNames = %q, %v; want %q", names, ok, want)
	}
	// Malformed: cut inside a record, a record length past the end or
	// shorter than the header, a name without its NUL.
	bad := dirent64(7, unix.DT_REG, "name")
	noNul := append([]byte{}, bad...)
	for i := 19; i < len(noNul); i++ {
		noNul[i] = 'n'
	}
	long := append([]byte{}, bad...)
	binary.NativeEndian.PutUint16(long[16:], uint16(len(bad)+8))
	short := append([]byte{}, bad...)
	binary.NativeEndian.PutUint16(short[16:], 8)
	for _, b := range [][]byte{bad[:10], long, short, noNul} {
		if _, ok := appendNames(nil, b); ok {
			t.Errorf("appendNames(% x) accepted a malformed record", b)
		}
	}
}

// TestListTypes checks what a listing says of each kind of entry: a
// directory by its type alone (no lstat), everything else lstat'ed, and a
// symlink to a directory a symlink, never a directory.
func TestListTypes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(os.WriteFile(filepath.Join(root, "file"), []byte("abc"), 0o600))
	must(os.Symlink("dir", filepath.Join(root, "link")))
	must(unix.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	r, err := os.OpenRoot(root)
	must(err)
	defer r.Close()
	d, err := openScanRoot(r)
	must(err)
	defer d.close()
	ents, err := d.list(nil)
	must(err)
	got := map[string]dirent{}
	var names []string
	for _, e := range ents {
		got[e.name] = e
		names = append(names, e.name)
	}
	if want := []string{"dir", "fifo", "file", "link"}; !slices.Equal(names, want) {
		t.Fatalf("listed %q, want %q", names, want)
	}
	if e := got["dir"]; !e.mode.IsDir() || e.lstated {
		t.Errorf("dir: mode %v, lstated %v; want a directory known by its type", e.mode, e.lstated)
	}
	if e := got["file"]; !e.mode.IsRegular() || !e.lstated || e.size != 3 || e.mode.Perm() != 0o600 || e.ino == 0 {
		t.Errorf("file: %+v", e)
	}
	if e := got["link"]; e.mode&fs.ModeSymlink == 0 || !e.lstated {
		t.Errorf("link: mode %v, lstated %v; want a symlink", e.mode, e.lstated)
	}
	if e := got["fifo"]; e.mode&fs.ModeNamedPipe == 0 || !e.lstated {
		t.Errorf("fifo: mode %v", e.mode)
	}
	// The directory opens; the symlink to it does not.
	sub, err := d.openDir(ptr(got["dir"]))
	must(err)
	sub.close()
	if _, err := d.openDir(ptr(got["link"])); !errors.Is(err, ErrSymlink) {
		t.Errorf("openDir(link) = %v, want ErrSymlink", err)
	}
	// A directory replaced by a symlink after the listing is not followed.
	must(os.Remove(filepath.Join(root, "dir")))
	must(os.Symlink("/", filepath.Join(root, "dir")))
	if sub, err := d.openDir(ptr(got["dir"])); err == nil {
		sub.close()
		t.Error("openDir followed a symlink swapped in for a listed directory")
	}
}

func ptr[T any](v T) *T { return &v }
