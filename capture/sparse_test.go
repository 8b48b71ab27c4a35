package capture

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCopySparseKeepsBytes: whatever mix of data and zero blocks, aligned
// or not, copySparse writes the same bytes it read.
func TestCopySparseKeepsBytes(t *testing.T) {
	t.Parallel()
	block := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for name, in := range map[string][]byte{
		"empty":            nil,
		"zeros":            block(0, 3*holeBlock),
		"short zeros":      block(0, 100),
		"data":             block('x', 5000),
		"hole then data":   cat(block(0, 2<<20), []byte("tail")),
		"data then hole":   cat([]byte("head"), block(0, 2<<20+7)),
		"data hole data":   cat(block('a', holeBlock+1), block(0, 5*holeBlock), block('b', 3)),
		"zeros in a block": cat(block('a', 10), block(0, holeBlock), block('b', holeBlock-10)),
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			n, err := copySparse(f, bytes.NewReader(in))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil || n != int64(len(in)) {
				t.Fatalf("copySparse = %d, %v; want %d, nil", n, err, len(in))
			}
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, in) {
				t.Errorf("wrote %d bytes (%v), not the %d read", len(got), err, len(in))
			}
		})
	}
}
