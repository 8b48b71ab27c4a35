package cas

import (
	"fmt"
	"io"

	"github.com/zeebo/blake3"
)

// verifier streams a blob's bytes and checks them against the blob's ID and
// recorded size. It never pulls more than size+1 bytes from src, which is
// what bounds decompression. Every failure of the stored bytes, including an
// error from src, is reported as ErrCorrupt.
type verifier struct {
	id     ID
	size   int64
	src    io.Reader
	done   func() // releases src; nil if nothing to release
	h      *blake3.Hasher
	n      int64
	err    error // sticky: the error every later Read returns
	closed bool
}

// newVerifier returns a verifier of src. A non-nil err is reported, wrapped
// as corruption, by the first Read; Open uses it for damage found before
// reading starts, so that corruption always surfaces from Read.
func newVerifier(id ID, size int64, src io.Reader, done func(), err error) *verifier {
	v := &verifier{id: id, size: size, src: src, done: done, h: blake3.New()}
	if err != nil {
		v.err = corrupt(id, err)
	}
	return v
}

func corrupt(id ID, err error) error {
	return fmt.Errorf("cas: read %s: %w: %w", id.Short(), ErrCorrupt, err)
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if room := v.size + 1 - v.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := v.src.Read(p)
	v.n += int64(n)
	if v.n > v.size {
		n -= int(v.n - v.size)
		v.h.Write(p[:n])
		v.err = corrupt(v.id, fmt.Errorf("longer than its recorded %d bytes", v.size))
		return n, v.err
	}
	v.h.Write(p[:n])
	switch {
	case err == io.EOF && v.n < v.size:
		v.err = corrupt(v.id, fmt.Errorf("truncated: %d of %d bytes", v.n, v.size))
	case err == io.EOF:
		v.err = io.EOF
		if sum := ID(v.h.Sum(nil)); sum != v.id {
			v.err = corrupt(v.id, fmt.Errorf("content hashes to %s", sum.Short()))
		}
	case err != nil:
		v.err = corrupt(v.id, err)
	}
	return n, v.err
}

// Close releases the reader; later Reads fail.
func (v *verifier) Close() error {
	if !v.closed {
		v.closed = true
		v.err = fmt.Errorf("cas: read %s: reader closed", v.id.Short())
		if v.done != nil {
			v.done()
		}
		v.src = nil
	}
	return nil
}

// readAll reads the whole blob and closes v. It allocates the recorded size
// up front, but no more than 64 MiB: past that a damaged row could claim any
// size, so the buffer grows only as bytes arrive.
func (v *verifier) readAll() ([]byte, error) {
	defer v.Close()
	b := make([]byte, 0, min(v.size, 64<<20)+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := v.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
