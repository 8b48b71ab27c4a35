package capture

import (
	"encoding/binary"
	"strings"
	"testing"
)

// dirent64 encodes one linux_dirent64 record, padded to 8 bytes.
func dirent64(ino uint64, name string) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b, ino)
	binary.NativeEndian.PutUint16(b[16:], uint16(n))
	copy(b[19:], name)
	return b
}

func TestAppendNames(t *testing.T) {
	var recs []byte
	for _, r := range []struct {
		ino  uint64
		name string
	}{{1, "."}, {2, ".."}, {3, "a.go"}, {0, "deleted"}, {4, strings.Repeat("x", 255)}, {5, "b"}} {
		recs = append(recs, dirent64(r.ino, r.name)...)
	}
	names, ok := appendNames([]byte("z\x00"), recs)
	if want := "z\x00a.go\x00" + strings.Repeat("x", 255) + "\x00b\x00"; !ok || string(names) != want {
		t.Fatalf("appendNames = %q, %v; want %q", names, ok, want)
	}
	// Malformed: cut inside a record, a record length past the end or
	// shorter than the header, a name without its NUL.
	bad := dirent64(7, "name")
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
