package capture

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// Whence values of lseek(2) that find a file's data and holes.
const (
	seekData = 3 // SEEK_DATA
	seekHole = 4 // SEEK_HOLE
)

// contentReader returns a reader of the regular file f (at offset 0),
// which Stat found to be fi. A file that takes less space on disk than its
// size has holes: its reader finds them with SEEK_DATA and SEEK_HOLE and
// returns their zeros without reading them, so reading a sparse file costs
// its data in system calls, not its size.
func contentReader(f *os.File, fi fs.FileInfo) io.Reader {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Blocks*512 >= fi.Size() {
		return f
	}
	return &holeReader{f: f, size: fi.Size()}
}

// holeReader reads a file from offset 0 by extents.
type holeReader struct {
	f          *os.File
	off, size  int64
	data, hole int64 // the extent at or after off: zeros before data, bytes up to hole
}

func (r *holeReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.off >= r.size {
		// Past the size Stat found: read on, so that a file that grew
		// meanwhile is seen to have (the byte count differs).
		return r.readAt(p)
	}
	if r.off >= r.hole {
		r.data, r.hole = r.extent(r.off)
	}
	if r.off < r.data {
		n := int(min(int64(len(p)), r.data-r.off))
		clear(p[:n])
		r.off += int64(n)
		return n, nil
	}
	return r.readAt(p[:min(int64(len(p)), r.hole-r.off)])
}

func (r *holeReader) readAt(p []byte) (int, error) {
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// extent returns where the first data at or after off starts, and the hole
// after it; past the last data, (size, size). Where the file system cannot
// say, the rest of the file is data.
func (r *holeReader) extent(off int64) (int64, int64) {
	data, err := r.f.Seek(off, seekData)
	if errors.Is(err, syscall.ENXIO) {
		return r.size, math.MaxInt64 // only a hole to the end
	}
	if err != nil {
		return off, math.MaxInt64
	}
	hole, err := r.f.Seek(data, seekHole)
	if err != nil {
		return data, math.MaxInt64
	}
	return data, hole
}
