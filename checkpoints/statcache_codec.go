package checkpoints

import (
	"encoding/binary"
	"io/fs"
	"strings"
	"unsafe"

	"github.com/ckpt/ckpt/cas"
)

// encodeDir encodes one directory's entries, sorted by path.
func encodeDir(es []StatEntry) []byte { return encodeStats(es, cas.ID{}, 0) }

// statBuckets is how many rows the stat cache is spread over: enough that
// a few edits rewrite little of it (a tree of a few thousand directories
// has about one directory per row), few enough that loading it is a few
// thousand row steps at most however many directories there are. A cache
// written with another count (256 before) has directories in rows that
// are not theirs, and is rewritten whole at its next save.
const statBuckets = 4096

// bucketRow is the statcache id of bucket b's row: the header is row 1,
// the buckets' rows are below 0.
func bucketRow(b int) int { return -1 - b }

// dirBucket returns the stat cache bucket of directory dir (FNV-1a of its
// path).
func dirBucket(dir string) int {
	h := uint32(2166136261)
	for i := 0; i < len(dir); i++ {
		h = (h ^ uint32(dir[i])) * 16777619
	}
	return int(h % statBuckets)
}

// dirOf returns the directory of a workspace-relative path, "" for the
// root.
func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// headerGen returns the generation of an encoded header row, 0 for none.
func headerGen(b []byte) int64 {
	_, gen, _ := decodeHeader(b)
	return gen
}

// encodeStats packs entries: a header when gen is not zero (a 0 byte,
// which no entry starts with, the manifest hash of, and gen as a varint),
// then per entry the path (length-prefixed), size, mtime, ctime, inode,
// mode, checked as varints, and the 32-byte blob id. The entries of a
// directory row are written a directory at a time, each sorted by path
// (ScanCache.Dir does not need to sort them then); an older cache may
// hold them in any order.
func encodeStats(entries []StatEntry, of cas.ID, gen int64) []byte {
	b := make([]byte, 0, 34+len(entries)*80)
	if gen != 0 {
		b = append(b, 0)
		b = append(b, of[:]...)
		b = binary.AppendVarint(b, gen)
	}
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e.Path)))
		b = append(b, e.Path...)
		b = binary.AppendVarint(b, e.Size)
		b = binary.AppendVarint(b, e.MTime)
		b = binary.AppendVarint(b, e.CTime)
		b = binary.AppendUvarint(b, e.Inode)
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendVarint(b, e.Checked)
		b = append(b, e.Blob[:]...)
	}
	return b
}

// decodeHeader returns the header of b (zero without one; ok false for a
// malformed one).
func decodeHeader(b []byte) (of cas.ID, gen int64, ok bool) {
	if len(b) == 0 || b[0] != 0 {
		return cas.ID{}, 0, true
	}
	if len(b) < 1+len(of) {
		return cas.ID{}, 0, false
	}
	copy(of[:], b[1:])
	gen, n := binary.Varint(b[1+len(of):])
	if n <= 0 || gen <= 0 {
		return cas.ID{}, 0, false
	}
	return of, gen, true
}

// headerLen returns the length of b's header, 0 without one, len(b) for
// a malformed one.
func headerLen(b []byte) int {
	if len(b) == 0 || b[0] != 0 {
		return 0
	}
	if len(b) < 1+len(cas.ID{}) {
		return len(b)
	}
	if _, n := binary.Varint(b[1+len(cas.ID{}):]); n > 0 {
		return 1 + len(cas.ID{}) + n
	}
	return len(b)
}

// decodeEntry decodes the entry b starts with and returns it with its
// encoded length, 0 when it is malformed. Its path is a view of b.
func decodeEntry(b []byte) (StatEntry, int) {
	var e StatEntry
	l, n := binary.Uvarint(b)
	if n <= 0 || l == 0 || uint64(len(b)-n) < l {
		return e, 0
	}
	i := n + int(l)
	e.Path = unsafe.String(&b[n], int(l))
	if e.Size, n = binary.Varint(b[i:]); n <= 0 {
		return e, 0
	}
	i += n
	if e.MTime, n = binary.Varint(b[i:]); n <= 0 {
		return e, 0
	}
	i += n
	if e.CTime, n = binary.Varint(b[i:]); n <= 0 {
		return e, 0
	}
	i += n
	ino, n := binary.Uvarint(b[i:])
	if n <= 0 {
		return e, 0
	}
	e.Inode, i = ino, i+n
	mode, n := binary.Uvarint(b[i:])
	if n <= 0 {
		return e, 0
	}
	e.Mode, i = fs.FileMode(mode), i+n
	if e.Checked, n = binary.Varint(b[i:]); n <= 0 {
		return e, 0
	}
	i += n
	if len(b)-i < len(e.Blob) {
		return e, 0
	}
	copy(e.Blob[:], b[i:])
	return e, i + len(e.Blob)
}

// entryPath returns the path of the entry b starts with and the entry's
// encoded length, 0 when it is malformed (exactly when decodeEntry finds
// it so): decodeEntry without building the entry, for loading, which
// only splits rows by directory.
func entryPath(b []byte) (string, int) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l == 0 || uint64(len(b)-n) < l {
		return "", 0
	}
	i := n + int(l)
	p := unsafe.String(&b[n], int(l))
	for range 6 { // size, mtime, ctime, inode, mode, checked
		if _, n = binary.Uvarint(b[i:]); n <= 0 {
			return "", 0
		}
		i += n
	}
	if len(b)-i < len(cas.ID{}) {
		return "", 0
	}
	return p, i + len(cas.ID{})
}

// decodeStats unpacks encodeStats into out and returns its header (zero
// without one). It stops at the first malformed entry and reports it (ok
// false): the cache is advisory, a lost entry only costs a re-read, but a
// partial cache vouches for no manifest.
//
// The paths are views of b, which the caller gives up: one allocation for
// the whole cache instead of one per path.
func decodeStats(b []byte, out map[string]StatEntry) (of cas.ID, gen int64, ok bool) {
	of, gen, ok = decodeHeader(b)
	if !ok {
		return cas.ID{}, 0, false
	}
	b = b[headerLen(b):]
	for len(b) > 0 {
		e, n := decodeEntry(b)
		if n <= 0 {
			return cas.ID{}, gen, false
		}
		out[e.Path] = e
		b = b[n:]
	}
	return of, gen, true
}
