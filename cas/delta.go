package cas

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Delta storage: see doc.go, "Deltas".
const (
	// encDelta is a zstd frame compressed with the plain bytes of the
	// row's base blob as its raw dictionary ("patch-from").
	encDelta = 2
	// maxDepth is how many delta frames a read decodes at most. A new
	// version whose base is this deep is encoded against the base's
	// ancestor at depth maxDepth/2 instead, or stored whole.
	maxDepth = 16
	// dictID names the raw dictionary in a delta frame's header. The base
	// is recorded in the row, so one constant id serves every frame.
	dictID = 1
)

type baseKey struct{}

// WithBase returns a context carrying a hint for Put and Batch.Put: base
// is the blob the content put next most likely resembles (the previous
// version of the same path). A Disk may then store the content as a delta
// against it. The hint changes how bytes are stored, never a result: the
// ID, the size and every read are the same with or without it, and a hint
// naming an absent, large or unreadable blob is ignored. Memory ignores it.
func WithBase(ctx context.Context, base ID) context.Context {
	if base.IsZero() {
		return ctx
	}
	return WithBaseFunc(ctx, func(context.Context) (ID, bool) { return base, true })
}

// WithBaseFunc is WithBase with the base looked up only when it is needed:
// fn is called when the content is not stored yet and is small enough to
// be a delta, so an index lookup costs nothing for unchanged content. fn
// reports false when there is no base.
func WithBaseFunc(ctx context.Context, fn func(context.Context) (ID, bool)) context.Context {
	return context.WithValue(ctx, baseKey{}, fn)
}

func baseOf(ctx context.Context) (ID, bool) {
	fn, ok := ctx.Value(baseKey{}).(func(context.Context) (ID, bool))
	if !ok {
		return ID{}, false
	}
	id, ok := fn(ctx)
	return id, ok && !id.IsZero()
}

// chainError is damage found in a delta chain: the blob at its top is
// corrupt. Readers report it wrapped in ErrCorrupt.
type chainError struct{ msg string }

func (e *chainError) Error() string { return e.msg }

func broken(format string, a ...any) error { return &chainError{fmt.Sprintf(format, a...)} }

// link is one row of a delta chain, as a read needs it.
type link struct {
	id     ID
	size   int64
	enc    int
	depth  int
	base   int64 // the base row's key; 0 unless enc is encDelta
	inline bool
	data   []byte
}

// chainSQL reads a chain in one query: the row of id (?1), its base's row,
// and so on, at most ?2 rows, in that order. A base column that is not an
// integer ends the chain at its row, as a missing base row does.
const chainSQL = `WITH RECURSIVE chain(n, id, size, enc, depth, base, infile, data) AS (
	SELECT 0, id, size, enc, depth, CASE typeof(base) WHEN 'integer' THEN base ELSE 0 END, data IS NULL, data
		FROM blobs WHERE ` + byID + `
	UNION ALL
	SELECT c.n + 1, b.id, b.size, b.enc, b.depth, CASE typeof(b.base) WHEN 'integer' THEN b.base ELSE 0 END, b.data IS NULL, b.data
		FROM chain c JOIN blobs b ON b.k = c.base WHERE c.enc = 2 AND c.n + 1 < ?2
) SELECT id, size, enc, depth, base, infile, data FROM chain ORDER BY n`

// links reads the chain that starts at id: id's row, its base's row, and so
// on down to the first row that is not a delta. A missing base, a row that
// is not inline, or a chain longer than any Disk writes is a *chainError
// (the blob id is corrupt, never "absent"); id's own row missing is
// ErrNotFound.
func (d *Disk) links(ctx context.Context, id ID) ([]link, error) {
	st, err := d.chainStmt.get(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, id, maxDepth+2)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var chain []link
	for rows.Next() {
		var l link
		var rid []byte
		var inFile bool
		if err := rows.Scan(&rid, &l.size, &l.enc, &l.depth, &l.base, &inFile, &l.data); err != nil {
			return nil, err
		}
		if len(rid) != len(ID{}) {
			return nil, broken("blob %s: bad row", id.Short())
		}
		copy(l.id[:], rid)
		l.inline = !inFile
		if l.enc == encDelta && (l.base == 0 || !l.inline || l.size > inlineMax) {
			return nil, broken("delta %s: bad row", l.id.Short())
		}
		chain = append(chain, l)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch {
	case len(chain) == 0:
		return nil, ErrNotFound
	case len(chain) > maxDepth+1: // maxDepth deltas read, and still no root
		return nil, broken("delta chain longer than %d", maxDepth)
	case chain[len(chain)-1].enc != encDelta:
		return chain, nil
	default:
		return nil, broken("base of %s missing", chain[len(chain)-1].id.Short())
	}
}

// plainChain decodes a chain read by links, root first, and returns the
// plain bytes of every link (plains[i] belongs to chain[i]). Each link is
// checked for its recorded length; hashes are left to the caller: the
// first link's hash covers every base it was decoded through (damage in a
// base that changes the result fails it), and a caller that uses a base's
// plain bytes for anything else hashes them itself. Failures are
// *chainError.
func (d *Disk) plainChain(chain []link) ([][]byte, error) {
	plains := make([][]byte, len(chain))
	for i := len(chain) - 1; i >= 0; i-- {
		l := chain[i]
		var b []byte
		var err error
		switch {
		case l.enc == encDelta:
			b, err = d.codec.decodeDelta(plains[i+1], l.data, l.size)
		case !l.inline || l.size > inlineMax:
			return nil, broken("base %s is not inline", l.id.Short())
		case l.enc == encZstd:
			b, err = d.codec.decode(l.data, l.size)
		case l.enc == encRaw:
			b = l.data
		default:
			return nil, broken("base %s: unknown encoding %d", l.id.Short(), l.enc)
		}
		if err != nil {
			return nil, broken("blob %s: %v", l.id.Short(), err)
		}
		if i > 0 && int64(len(b)) != l.size {
			return nil, broken("base %s does not match its recorded size", l.id.Short())
		}
		plains[i] = b
	}
	return plains, nil
}

// plain returns the plain bytes of the inline blob id, decoding its delta
// chain if it has one. Only its bases are verified: callers hash the
// result.
func (d *Disk) plain(ctx context.Context, id ID) ([]byte, error) {
	chain, err := d.links(ctx, id)
	if err != nil {
		return nil, err
	}
	plains, err := d.plainChain(chain)
	if err != nil {
		return nil, err
	}
	return plains[0], nil
}

// delta tries to encode b as a delta against the blob the hint names.
// It returns ok false, and costs nothing more, when there is nothing to
// gain: no usable base, or a delta not meaningfully smaller than the whole
// frame. full is b's ordinary encoding when it had to be computed (nil
// otherwise), so the caller need not compress twice.
func (d *Disk) delta(ctx context.Context, hint ID, b []byte) (p pending, full []byte, fullEnc int, ok bool) {
	if len(b) < minCompress {
		return p, nil, 0, false
	}
	chain, err := d.links(ctx, hint)
	if err != nil {
		return p, nil, 0, false // an absent or damaged base: store whole
	}
	plains, err := d.plainChain(chain)
	if err != nil || int64(len(plains[0])) != chain[0].size || Sum(plains[0]) != hint {
		return p, nil, 0, false
	}
	// Encode against the hint, or, when the hint is as deep as a chain may
	// go, against its ancestor at half that depth: the delta then holds
	// the few versions' changes since, where one against the root would
	// grow with the whole history. Depths are counted on the chain read,
	// not taken from the rows.
	base, dict, depth := hint, plains[0], len(chain)
	if depth > maxDepth {
		k := len(chain) - 1 - maxDepth/2
		base, dict, depth = chain[k].id, plains[k], maxDepth/2+1
		// A damaged base can decode to a right hint when the hint's delta
		// does not copy from the damage; a delta against it would read
		// only as long as the damage stays.
		if Sum(dict) != base {
			return p, nil, 0, false
		}
	}
	if len(dict) < minCompress {
		return p, nil, 0, false
	}
	z := d.codec.encodeDelta(dict, b)
	// A delta under 1/16 of the content is taken at once; otherwise it
	// must beat the whole frame by a quarter, or a read would pay the
	// chain's decodes for little.
	if len(z) > len(b)/16 {
		full, fullEnc = d.codec.encode(b, false)
		if len(z) > len(full)-len(full)/4 {
			return p, full, fullEnc, false
		}
	}
	return pending{size: int64(len(b)), stored: int64(len(z)), enc: encDelta, data: z, base: base, depth: depth}, nil, 0, true
}

// A delta's data is one of two forms. Rows written before migration 0003
// hold a whole zstd frame, which starts with the zstd magic (0x28 first).
// Newer rows hold bareDelta and then the frame's blocks: the frame header
// (magic, descriptor, dictionary id, content size; 8 bytes on most deltas)
// says only what the row says already, so it is left out and rebuilt on
// read. A delta is ~150 bytes, so that is 5% of it.
const bareDelta = 0x00

// encodeDelta compresses b with dict as its raw dictionary, in the bare
// form when the frame's header is the one decodeDelta rebuilds.
func (c *codec) encodeDelta(dict, b []byte) []byte {
	e := c.deltaEncs.Get().(*zstd.Encoder)
	defer c.deltaEncs.Put(e)
	if err := e.ResetWithOptions(nil, zstd.WithEncoderDictRaw(dictID, dict)); err != nil {
		panic(err) // only a dictionary over 2 GiB fails, and ours are at most inlineMax
	}
	return bareFrame(e.EncodeAll(b, make([]byte, 0, len(b)/4+64)), len(b))
}

// bareFrame returns the delta frame z of n plain bytes in the bare form when
// its header is the one decodeDelta rebuilds, else a copy of z.
func bareFrame(z []byte, n int) []byte {
	var h zstd.Header
	if err := h.Decode(z); err == nil && h.SingleSegment && h.DictionaryID == dictID && !h.HasCheckSum &&
		h.HasFCS && h.FrameContentSize == uint64(n) && h.HeaderSize > 0 && h.HeaderSize < len(z) {
		return append([]byte{bareDelta}, z[h.HeaderSize:]...)
	}
	return bytes.Clone(z) // z's spare capacity would stay pinned in a batch
}

// decodeDelta decompresses a delta of size plain bytes against dict. It
// decodes at most size+1 bytes.
func (c *codec) decodeDelta(dict, z []byte, size int64) ([]byte, error) {
	if len(z) > 0 && z[0] == bareDelta {
		if size < 0 || size > inlineMax {
			return nil, fmt.Errorf("delta of impossible size %d", size)
		}
		// The header a single-segment frame of size bytes against
		// dictionary dictID has: magic, a descriptor (4-byte content size,
		// single segment, 1-byte dictionary id), the id, the size.
		f := make([]byte, 0, 10+len(z)-1)
		f = append(f, 0x28, 0xb5, 0x2f, 0xfd, 0xa1, dictID)
		f = binary.LittleEndian.AppendUint32(f, uint32(size))
		z = append(f, z[1:]...)
	}
	dec := c.deltaDecs.Get().(*zstd.Decoder)
	defer c.deltaDecs.Put(dec)
	if err := dec.ResetWithOptions(nil, zstd.WithDecoderDictRaw(dictID, dict)); err != nil {
		return nil, err
	}
	return dec.DecodeAll(z, make([]byte, 0, size+1))
}
