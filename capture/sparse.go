package capture

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// holeBlock is the unit copySparse leaves out when it holds only zeros:
// the block size of common file systems, the smallest hole they keep.
const holeBlock = 4096

// zeros is a block of zero bytes to compare against.
var zeros [holeBlock]byte

// sparseBufs holds copySparse's read buffers.
var sparseBufs = sync.Pool{New: func() any { return new([1 << 20]byte) }}

// copySparse writes what r holds to f (new and empty, at offset 0) and
// returns the byte count. Each whole aligned block of zeros is skipped with
// a seek instead of written, and a file that ends in zeros is extended with
// Truncate, so a sparse file comes back sparse: it takes on disk about the
// space of its data, and writing it costs its data, not its size. On a
// file system without holes the skipped blocks read back as zeros all the
// same. r is read to its end, so a verifying reader reports a mismatch.
func copySparse(f *os.File, r io.Reader) (int64, error) {
	buf := sparseBufs.Get().(*[1 << 20]byte)
	defer sparseBufs.Put(buf)
	var off int64 // bytes read from r so far
	var at int64  // f's offset: off less the pending hole
	for {
		n, rerr := io.ReadFull(r, buf[:])
		for i := 0; i < n; {
			// One run of data blocks, written at once, then one of zero
			// blocks, skipped.
			j := i
			for j < n && !isZero(buf[j:min(j+holeBlock, n)]) {
				j = min(j+holeBlock, n)
			}
			if j > i {
				if at != off {
					if _, err := f.Seek(off, io.SeekStart); err != nil {
						return off, err
					}
				}
				if _, err := f.Write(buf[i:j]); err != nil {
					return off, err
				}
				off += int64(j - i)
				at = off
			}
			k := j
			for k < n && isZero(buf[k:min(k+holeBlock, n)]) {
				k = min(k+holeBlock, n)
			}
			off += int64(k - j)
			i = k
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return off, rerr
		}
	}
	if at != off {
		if err := f.Truncate(off); err != nil {
			return off, err
		}
	}
	return off, nil
}

// isZero reports whether b holds only zero bytes (len(b) <= holeBlock).
func isZero(b []byte) bool { return bytes.Equal(b, zeros[:len(b)]) }
