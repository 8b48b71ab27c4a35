package checkpoints

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sort"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// summaryVersion is the first byte of an encoded summary; a row in another
// encoding is read from its index again.
const summaryVersion = 1

// encodeSummary encodes s (all but ID and Err) for the catalog. Blob ids
// are stored once; turns and undo records name them by position. The
// encoding of a summary is the same however its index listed the rows.
func encodeSummary(s Summary) []byte {
	refs := append([]cas.ID(nil), s.Refs...)
	sortIDs(refs)
	pos := make(map[cas.ID]uint64, len(refs))
	for i, id := range refs {
		pos[id] = uint64(i)
	}
	index := func(id cas.ID) uint64 {
		p, ok := pos[id]
		if !ok { // not in Refs: add it, so a summary never loses a blob
			p = uint64(len(refs))
			refs = append(refs, id)
			pos[id] = p
		}
		return p
	}
	var body []byte
	putIDs := func(ids []cas.ID) {
		ps := make([]uint64, len(ids))
		for i, id := range ids {
			ps[i] = index(id)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		body = binary.AppendUvarint(body, uint64(len(ps)))
		for _, p := range ps {
			body = binary.AppendUvarint(body, p)
		}
	}
	putIDs(s.Undo)
	body = binary.AppendUvarint(body, uint64(len(s.Turns)))
	for _, t := range s.Turns {
		body = binary.AppendVarint(body, t.ID)
		body = binary.AppendVarint(body, t.Seq)
		body = binary.AppendVarint(body, int64(t.Number))
		var flags byte
		for i, f := range []bool{t.Hidden, t.Pinned, t.Pruned} {
			if f {
				flags |= 1 << i
			}
		}
		body = append(body, flags)
		body = binary.AppendVarint(body, t.Time.UnixNano())
		putIDs(t.Blobs)
	}
	b := []byte{summaryVersion}
	b = appendString(b, s.Workspace)
	b = appendString(b, s.Origin.Session)
	b = binary.AppendVarint(b, int64(s.Origin.Turn))
	if s.LastUse.IsZero() {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.AppendVarint(b, s.LastUse.UnixNano())
	}
	b = binary.AppendUvarint(b, uint64(len(refs)))
	for _, id := range refs {
		b = append(b, id[:]...)
	}
	return append(b, body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func sortIDs(ids []cas.ID) {
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
}

var errBadSummary = errors.New("catalog: malformed summary")

// decodeSummary is encodeSummary's inverse.
func decodeSummary(b []byte) (Summary, error) {
	d := decoder{b: b}
	var s Summary
	if d.byte() != summaryVersion {
		return s, errBadSummary
	}
	s.Workspace = d.string()
	s.Origin.Session = d.string()
	s.Origin.Turn = int(d.varint())
	if d.byte() == 1 {
		s.LastUse = time.Unix(0, d.varint())
	}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b))/32 {
		return s, errBadSummary
	}
	s.Refs = make([]cas.ID, n)
	for i := range s.Refs {
		copy(s.Refs[i][:], d.b[:32])
		d.b = d.b[32:]
	}
	ids := func() []cas.ID {
		k := d.uvarint()
		if d.err != nil || k > uint64(len(d.b)) {
			d.err = errBadSummary
			return nil
		}
		out := make([]cas.ID, 0, k)
		for ; k > 0 && d.err == nil; k-- {
			p := d.uvarint()
			if p >= uint64(len(s.Refs)) {
				d.err = errBadSummary
				return nil
			}
			out = append(out, s.Refs[p])
		}
		return out
	}
	s.Undo = ids()
	nt := d.uvarint()
	if d.err != nil || nt > uint64(len(d.b)) {
		return s, errBadSummary
	}
	s.Turns = make([]TurnRecord, 0, nt)
	for ; nt > 0 && d.err == nil; nt-- {
		var t TurnRecord
		t.ID = d.varint()
		t.Seq = d.varint()
		t.Number = int(d.varint())
		flags := d.byte()
		t.Hidden, t.Pinned, t.Pruned = flags&1 != 0, flags&2 != 0, flags&4 != 0
		t.Time = time.Unix(0, d.varint())
		t.Blobs = ids()
		s.Turns = append(s.Turns, t)
	}
	if d.err != nil || len(d.b) != 0 {
		return Summary{}, errBadSummary
	}
	return s, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errBadSummary
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadSummary
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errBadSummary
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errBadSummary
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
