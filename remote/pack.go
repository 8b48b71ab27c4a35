package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/remote/backend"
)

// A pack is an immutable object holding blobs in their stored form (zstd
// frames or raw bytes, as the local store keeps them), followed by a
// trailer that indexes them:
//
//	frame 0 | frame 1 | ... | entry 0 | entry 1 | ... | count u32 | "CKPTPAK1"
//
// Each entry is 57 bytes: the blob id (32), its uncompressed size (u64),
// its encoding (u8: 0 raw, 1 zstd), the frame's offset and length (u64 each),
// all little-endian. A pack's key is packs/XX/HEX.pack, HEX being the
// BLAKE3-256 of the whole pack, so a pack is written once and never changes.
// Packs aim at PackTarget bytes; a blob whose frame alone is larger goes in a
// pack of its own.
const (
	PackTarget = 16 << 20
	entrySize  = 57
	footerSize = 12
	packMagic  = "CKPTPAK1"
)

// Entry locates one blob in a pack.
type Entry struct {
	cas.Stored
	Off int64
}

func packKey(sum cas.ID) string {
	h := sum.String()
	return "packs/" + h[:2] + "/" + h + ".pack"
}

// trailer encodes entries and the footer.
func trailer(es []Entry) []byte {
	b := make([]byte, 0, len(es)*entrySize+footerSize)
	for _, e := range es {
		b = append(b, e.ID[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Size))
		b = append(b, byte(e.Enc))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Off))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Stored.Stored))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(es)))
	return append(b, packMagic...)
}

// trailerLen is the length of a trailer with n entries.
func trailerLen(n int) int64 { return int64(n)*entrySize + footerSize }

// parseTrailer decodes the trailer of a pack of packSize bytes; t is its
// last trailerLen(n) bytes. Every entry must lie within the frames.
func parseTrailer(t []byte, packSize int64) ([]Entry, error) {
	if len(t) < footerSize || string(t[len(t)-8:]) != packMagic {
		return nil, fmt.Errorf("pack trailer: no magic: %w", cas.ErrCorrupt)
	}
	n := int(binary.LittleEndian.Uint32(t[len(t)-footerSize:]))
	if trailerLen(n) != int64(len(t)) {
		return nil, fmt.Errorf("pack trailer: %d entries in %d bytes: %w", n, len(t), cas.ErrCorrupt)
	}
	end := packSize - int64(len(t))
	es := make([]Entry, n)
	for i := range es {
		b := t[i*entrySize:]
		var e Entry
		copy(e.ID[:], b[:32])
		e.Size = int64(binary.LittleEndian.Uint64(b[32:]))
		e.Enc = int(b[40])
		e.Off = int64(binary.LittleEndian.Uint64(b[41:]))
		e.Stored.Stored = int64(binary.LittleEndian.Uint64(b[49:]))
		if e.Size < 0 || e.Off < 0 || e.Stored.Stored < 0 || e.Off > end || e.Stored.Stored > end-e.Off || e.Enc > 1 {
			return nil, fmt.Errorf("pack trailer: entry %d out of bounds: %w", i, cas.ErrCorrupt)
		}
		es[i] = e
	}
	return es, nil
}

// packBuilder gathers small blobs' frames into one pack in memory.
type packBuilder struct {
	buf     bytes.Buffer
	entries []Entry
}

func (p *packBuilder) add(s cas.Stored, r io.Reader) error {
	off := int64(p.buf.Len())
	n, err := io.Copy(&p.buf, r)
	if err != nil {
		return err
	}
	if n != s.Stored {
		return fmt.Errorf("blob %s: read %d stored bytes of %d: %w", s.ID.Short(), n, s.Stored, cas.ErrCorrupt)
	}
	p.entries = append(p.entries, Entry{Stored: s, Off: off})
	return nil
}

// fits reports whether a frame of n bytes can join without passing the
// target.
func (p *packBuilder) fits(n int64) bool {
	return int64(p.buf.Len())+n+trailerLen(len(p.entries)+1) <= PackTarget
}

// finish returns the pack's bytes and key.
func (p *packBuilder) finish() ([]byte, string) {
	p.buf.Write(trailer(p.entries))
	b := p.buf.Bytes()
	return b, packKey(cas.Sum(b))
}

// readTrailer fetches and decodes the trailer of the pack at key, whose
// size and entry count the HEAD records.
func readTrailer(ctx context.Context, b backend.Backend, key string, size int64, n int) ([]Entry, error) {
	tl := trailerLen(n)
	if tl > size {
		return nil, fmt.Errorf("pack %s: %d entries cannot fit %d bytes: %w", key, n, size, cas.ErrCorrupt)
	}
	r, err := b.Get(ctx, key, size-tl, tl)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t, err := cas.ReadFull(r, tl)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", key, err)
	}
	es, err := parseTrailer(t, size)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", key, err)
	}
	return es, nil
}
