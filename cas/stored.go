package cas

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
)

// Stored describes a blob in the form the store keeps it: its encoding
// (0 raw, 1 one zstd frame) and the encoded bytes. A remote copies blobs in
// this form, so they are compressed once, on the machine that captured them.
// A blob kept as a delta (doc.go, "Deltas") is handed out whole instead:
// every stored form stands alone.
type Stored struct {
	ID     ID
	Size   int64 // uncompressed bytes
	Enc    int   // 0 raw, 1 zstd
	Stored int64 // encoded bytes
}

// MaxInline is the largest uncompressed size a Disk keeps inline in
// blobs.db; larger blobs are files.
const MaxInline = inlineMax

// OpenStored returns the blob's encoded bytes as stored, unverified (the
// receiver verifies: PutStored decodes and hashes). It returns an error
// wrapping ErrNotFound when the blob is absent, and ErrCorrupt when its row
// names an object file that is missing.
func (d *Disk) OpenStored(ctx context.Context, id ID) (Stored, io.ReadCloser, error) {
	if d.closed.Load() {
		return Stored{}, nil, fmt.Errorf("cas: open stored %s: %w", id.Short(), ErrClosed)
	}
	s := Stored{ID: id}
	var inFile bool
	var data []byte
	err := d.db.QueryRowContext(ctx, `SELECT size, enc, stored, data IS NULL, data FROM blobs WHERE `+byID, id).
		Scan(&s.Size, &s.Enc, &s.Stored, &inFile, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil, fmt.Errorf("cas: open stored %s: %w", id.Short(), ErrNotFound)
	}
	if err != nil {
		return s, nil, fmt.Errorf("cas: open stored %s: %w", id.Short(), err)
	}
	if s.Enc == encDelta {
		return d.openDeltaStored(ctx, s)
	}
	if s.Enc != encRaw && s.Enc != encZstd {
		return s, nil, fmt.Errorf("cas: open stored %s: unknown encoding %d: %w", id.Short(), s.Enc, ErrCorrupt)
	}
	if !inFile {
		s.Stored = int64(len(data))
		return s, io.NopCloser(bytes.NewReader(data)), nil
	}
	f, err := os.Open(d.objectPath(id))
	if os.IsNotExist(err) {
		return s, nil, fmt.Errorf("cas: open stored %s: object file missing: %w", id.Short(), ErrCorrupt)
	}
	if err != nil {
		return s, nil, fmt.Errorf("cas: open stored %s: %w", id.Short(), err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return s, nil, err
	}
	s.Stored = fi.Size()
	return s, f, nil
}

// openDeltaStored decodes a delta blob's chain and encodes its content as
// one self-contained frame (or raw), verified.
func (d *Disk) openDeltaStored(ctx context.Context, s Stored) (Stored, io.ReadCloser, error) {
	b, err := d.plain(ctx, s.ID)
	if ce := (*chainError)(nil); errors.As(err, &ce) {
		return s, nil, fmt.Errorf("cas: open stored %s: %v: %w", s.ID.Short(), err, ErrCorrupt)
	}
	if err != nil {
		return s, nil, fmt.Errorf("cas: open stored %s: %w", s.ID.Short(), err)
	}
	if int64(len(b)) != s.Size || Sum(b) != s.ID {
		return s, nil, fmt.Errorf("cas: open stored %s: content does not match its id: %w", s.ID.Short(), ErrCorrupt)
	}
	z, enc := d.codec.encode(b, false)
	s.Enc, s.Stored = enc, int64(len(z))
	return s, io.NopCloser(bytes.NewReader(z)), nil
}

// PutStored records a blob from its stored form: s.Stored encoded bytes from
// r, encoded as s.Enc, which must decode to s.Size bytes hashing to s.ID.
// Anything else (a truncated or altered body, a wrong size) fails with an
// error wrapping ErrCorrupt and records nothing. The bytes are kept as
// given, not re-encoded. Recording a blob already stored is a no-op.
func (d *Disk) PutStored(ctx context.Context, s Stored, r io.Reader) error {
	if d.closed.Load() {
		return fmt.Errorf("cas: put stored %s: %w", s.ID.Short(), ErrClosed)
	}
	if s.Enc != encRaw && s.Enc != encZstd || s.Size < 0 || s.Stored < 0 {
		return fmt.Errorf("cas: put stored %s: bad description %+v: %w", s.ID.Short(), s, ErrCorrupt)
	}
	if ok, err := d.has(ctx, s.ID); err != nil || ok {
		return err
	}
	r = ctxReader{ctx, r}
	var p pending
	if s.Size <= inlineMax {
		if s.Stored > 2*inlineMax {
			return fmt.Errorf("cas: put stored %s: %d encoded bytes for %d: %w", s.ID.Short(), s.Stored, s.Size, ErrCorrupt)
		}
		data, err := ReadFull(r, s.Stored)
		if err != nil {
			return fmt.Errorf("cas: put stored %s: %w", s.ID.Short(), err)
		}
		if p, err = d.checkInline(s, data); err != nil {
			return err
		}
	} else {
		t, err := createTemp(d.dir + string(os.PathSeparator) + "tmp")
		if err != nil {
			return err
		}
		if err := d.writeVerified(t, s, r); err != nil {
			t.discard()
			return fmt.Errorf("cas: put stored %s: %w", s.ID.Short(), err)
		}
		if p.stored, err = t.sync(); err != nil {
			t.discard()
			return err
		}
		p.id, p.size, p.enc, p.file = s.ID, s.Size, s.Enc, t
	}
	if err := d.record(ctx, []pending{p}); err != nil {
		return fmt.Errorf("cas: put stored %s: %w", s.ID.Short(), err)
	}
	return nil
}

// writeVerified copies s.Stored bytes from r to t, decoding and hashing
// them on the way.
func (d *Disk) writeVerified(t *tempFile, s Stored, r io.Reader) error {
	body := &countReader{r: io.LimitReader(r, s.Stored)}
	tee := io.TeeReader(body, t)
	var src io.Reader = tee
	if s.Enc == encZstd {
		z, err := d.codec.decoder(tee)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		defer d.codec.putDecoder(z)
		src = z
	}
	v := newVerifier(s.ID, s.Size, src, nil, nil)
	if _, err := io.Copy(io.Discard, v); err != nil {
		return err
	}
	// Bytes after the frame would be kept but never read: refuse them.
	if n, err := io.Copy(t, body); err != nil {
		return err
	} else if n > 0 || body.n != s.Stored {
		return fmt.Errorf("%d encoded bytes, want %d: %w", body.n, s.Stored, ErrCorrupt)
	}
	return nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// checkInline verifies an inline blob's stored bytes and makes its pending
// row.
func (d *Disk) checkInline(s Stored, data []byte) (pending, error) {
	if s.Size > inlineMax || int64(len(data)) != s.Stored {
		return pending{}, fmt.Errorf("cas: put stored %s: %d bytes for an inline blob of %d: %w", s.ID.Short(), len(data), s.Size, ErrCorrupt)
	}
	plain := data
	if s.Enc == encZstd {
		var err error
		if plain, err = d.codec.decode(data, s.Size); err != nil {
			return pending{}, fmt.Errorf("cas: put stored %s: %w: %v", s.ID.Short(), ErrCorrupt, err)
		}
	}
	if int64(len(plain)) != s.Size || Sum(plain) != s.ID {
		return pending{}, fmt.Errorf("cas: put stored %s: content does not match its id: %w", s.ID.Short(), ErrCorrupt)
	}
	if data == nil {
		data = []byte{} // a row's inline data is never NULL
	}
	return pending{id: s.ID, size: s.Size, stored: int64(len(data)), enc: s.Enc, data: data}, nil
}

// PutStoredInline records many small blobs (each at most MaxInline
// uncompressed) from their stored bytes in one transaction, verifying each
// as PutStored does. If any fails verification, none is recorded.
func (d *Disk) PutStoredInline(ctx context.Context, ss []Stored, data [][]byte) error {
	if d.closed.Load() {
		return fmt.Errorf("cas: put stored: %w", ErrClosed)
	}
	if len(ss) != len(data) {
		return fmt.Errorf("cas: put stored: %d descriptions for %d bodies", len(ss), len(data))
	}
	ps := make([]pending, 0, len(ss))
	for i, s := range ss {
		if s.Enc != encRaw && s.Enc != encZstd || s.Size < 0 {
			return fmt.Errorf("cas: put stored %s: bad description %+v: %w", s.ID.Short(), s, ErrCorrupt)
		}
		p, err := d.checkInline(s, data[i])
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil
	}
	if err := d.record(ctx, ps); err != nil {
		return fmt.Errorf("cas: put stored: %w", err)
	}
	return nil
}

// CheckStored verifies s.Stored encoded bytes from r against s, as
// PutStored does, and records nothing: for checking a remote copy.
func (d *Disk) CheckStored(ctx context.Context, s Stored, r io.Reader) error {
	if s.Enc != encRaw && s.Enc != encZstd || s.Size < 0 || s.Stored < 0 {
		return fmt.Errorf("cas: check stored %s: bad description %+v: %w", s.ID.Short(), s, ErrCorrupt)
	}
	body := &countReader{r: io.LimitReader(ctxReader{ctx, r}, s.Stored)}
	var src io.Reader = body
	if s.Enc == encZstd {
		z, err := d.codec.decoder(body)
		if err != nil {
			return fmt.Errorf("cas: check stored %s: %w: %v", s.ID.Short(), ErrCorrupt, err)
		}
		defer d.codec.putDecoder(z)
		src = z
	}
	if _, err := io.Copy(io.Discard, newVerifier(s.ID, s.Size, src, nil, nil)); err != nil {
		return err
	}
	if n, _ := io.Copy(io.Discard, body); n > 0 || body.n != s.Stored {
		return fmt.Errorf("cas: check stored %s: %d encoded bytes, want %d: %w", s.ID.Short(), body.n, s.Stored, ErrCorrupt)
	}
	return nil
}

// ReadFull reads exactly n bytes from r. A body shorter than n is an error
// wrapping ErrCorrupt (a truncated object), never fewer bytes.
func ReadFull(r io.Reader, n int64) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, errors.Join(ErrCorrupt, err)
		}
		return nil, err
	}
	return b, nil
}
