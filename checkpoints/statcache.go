package checkpoints

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// StatEntry is the stat cache's memory of one file: if a file's stat
// still matches, its content is taken to be Blob without reading it
// (unless the entry is racy: see Racy).
type StatEntry struct {
	Path    string
	Size    int64
	MTime   int64 // nanoseconds
	CTime   int64 // nanoseconds
	Inode   uint64
	Mode    fs.FileMode
	Blob    cas.ID
	Checked int64 // when the stat was taken, nanoseconds
}

// RacyWindow is how close to the moment it was stat'ed a file's mtime may
// be before the entry is distrusted: a write in the same clock tick as the
// stat would not change the mtime the cache saw (git's "racy clean").
const RacyWindow = 2 * time.Second

// Racy reports whether the entry cannot vouch for its file: its mtime is
// within RacyWindow of the moment it was stat'ed.
func (e StatEntry) Racy() bool { return e.MTime >= e.Checked-int64(RacyWindow) }

// StatCache returns the session's stat cache.
func (x *Index) StatCache(ctx context.Context) (map[string]StatEntry, error) {
	sc, err := x.LoadScanCache(ctx)
	if err != nil {
		return nil, err
	}
	return sc.Entries(), nil
}

// ScanCache is the stat cache as a scan starts from it: each directory's
// entries, kept encoded until a scan reaches the directory (Dir), so
// loading it costs one copy of its rows and no allocation per entry. It is
// not changed once loaded, and is safe for concurrent reads.
type ScanCache struct {
	// Manifest is the content hash of the manifest taken by the scan that
	// wrote the cache (zero when unknown). A scan that reports its changes
	// against this cache (Manifest.Since) lets the turn store its manifest
	// as a delta without reading the previous one.
	Manifest cas.ID
	gen      int64 // the cache's generation; 0: none, or an old single-row cache
	// dirs holds each directory's entries (encodeStats without a header),
	// in one span, or several in a cache an older ckpt wrote.
	dirs map[string][][]byte
	n    int
	// misplaced: a row held a directory of another bucket (no ckpt
	// writes that), so a save rewrites every row.
	misplaced bool
}

// NewScanCache returns a cache holding exactly entries, as a scan that
// saved them would load it.
func NewScanCache(entries []StatEntry) *ScanCache {
	sc := &ScanCache{dirs: map[string][][]byte{}}
	for d, es := range StatsByDir(entries) {
		sc.dirs[d] = [][]byte{encodeDir(es)}
		sc.n += len(es)
	}
	return sc
}

// Len returns how many entries the cache holds.
func (sc *ScanCache) Len() int {
	if sc == nil {
		return 0
	}
	return sc.n
}

// DirNames returns the directories ("" for the root) the cache holds
// entries of, in no order.
func (sc *ScanCache) DirNames() []string {
	if sc == nil {
		return nil
	}
	out := make([]string, 0, len(sc.dirs))
	for d := range sc.dirs {
		out = append(out, d)
	}
	return out
}

// Dir appends the entries of directory dir ("" for the root) to buf,
// sorted by path, and returns it. Their paths stay valid as long as the
// cache.
func (sc *ScanCache) Dir(dir string, buf []StatEntry) []StatEntry {
	buf = buf[:0]
	if sc == nil {
		return buf
	}
	spans := sc.dirs[dir]
	sorted := len(spans) <= 1
	for _, b := range spans {
		for len(b) > 0 {
			e, n := decodeEntry(b)
			if n <= 0 {
				break // checked when loaded
			}
			b = b[n:]
			if len(buf) > 0 && buf[len(buf)-1].Path >= e.Path {
				sorted = false
			}
			buf = append(buf, e)
		}
	}
	if !sorted {
		slices.SortFunc(buf, func(a, b StatEntry) int { return strings.Compare(a.Path, b.Path) })
		buf = slices.CompactFunc(buf, func(a, b StatEntry) bool { return a.Path == b.Path })
	}
	return buf
}

// Entries returns every entry by path.
func (sc *ScanCache) Entries() map[string]StatEntry {
	out := make(map[string]StatEntry, sc.Len())
	if sc == nil {
		return out
	}
	var buf []StatEntry
	for d := range sc.dirs {
		buf = sc.Dir(d, buf)
		for _, e := range buf {
			out[e.Path] = e
		}
	}
	return out
}

// addSpans splits b, a row of encoded entries (bucket's, -1 for the old
// single row), into runs of one directory each. It stops at the first
// malformed entry and reports it.
func (sc *ScanCache) addSpans(b []byte, bucket int) bool {
	start, cur := 0, ""
	add := func(end int) {
		if end > start {
			sc.dirs[cur] = append(sc.dirs[cur], b[start:end])
			if bucket >= 0 && dirBucket(cur) != bucket {
				sc.misplaced = true
			}
		}
	}
	for i := 0; i < len(b); {
		p, n := entryPath(b[i:])
		if n <= 0 {
			add(i)
			return false
		}
		if d := dirOf(p); i == start || d != cur {
			add(i)
			start, cur = i, d
		}
		sc.n++
		i += n
	}
	add(len(b))
	return true
}

// LoadScanCache returns the session's stat cache and what it belongs to.
func (x *Index) LoadScanCache(ctx context.Context) (*ScanCache, error) {
	var sc *ScanCache
	err := x.readMapped(ctx, func(tx *sql.Tx) error {
		var err error
		sc, err = loadScanCache(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	return sc, nil
}

func statCache(ctx context.Context, tx *sql.Tx) (map[string]StatEntry, error) {
	sc, err := loadScanCache(ctx, tx)
	if err != nil {
		return nil, err
	}
	return sc.Entries(), nil
}

// loadScanCache reads the header row and, while it exists, the directory
// rows, copied into a few large buffers the entries' paths point into. A damaged
// row costs its entries from the first bad one on, and the manifest hash.
func loadScanCache(ctx context.Context, tx *sql.Tx) (*ScanCache, error) {
	sc := &ScanCache{dirs: map[string][][]byte{}}
	var data []byte
	err := tx.QueryRowContext(ctx, `SELECT data FROM statcache WHERE id = 1`).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return sc, nil
	}
	if err != nil {
		return nil, err
	}
	hdr, gen, ok := decodeHeader(data)
	if !ok || gen == 0 {
		// An old single-row cache: its entries follow the header.
		sc.Manifest, sc.gen = hdr, 0
		if !sc.addSpans(bytes.Clone(data[headerLen(data):]), -1) {
			sc.Manifest = cas.ID{}
		}
		return sc, nil
	}
	sc.Manifest, sc.gen = hdr, gen
	// The rows are copied into chunks of arenaChunk bytes (a longer row
	// into one of its own): no allocation per row, and no query for the
	// total size first.
	var arena []byte
	rows, err := tx.QueryContext(ctx, `SELECT -1 - id, data FROM statcache WHERE id < 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var b int
		var d sql.RawBytes
		if err := rows.Scan(&b, &d); err != nil {
			return nil, err
		}
		if len(arena)+len(d) > cap(arena) {
			arena = make([]byte, 0, max(len(d), arenaChunk)) // spans keep the previous chunk alive
		}
		off := len(arena)
		arena = append(arena, d...)
		if !sc.addSpans(arena[off:len(arena):len(arena)], b) {
			sc.Manifest = cas.ID{}
		}
	}
	return sc, rows.Err()
}

// arenaChunk is the size of the buffers loadScanCache copies rows into.
// The part of the last one that no row reaches is never touched, so
// costs no memory.
const arenaChunk = 256 << 10

// UpdateStatCache makes the stat cache hold exactly entries. It writes
// nothing when they equal old (the cache as it was read): an unchanged
// re-scan.
func (x *Index) UpdateStatCache(ctx context.Context, old map[string]StatEntry, entries []StatEntry) error {
	if len(old) == len(entries) {
		same := true
		for _, e := range entries {
			if o, ok := old[e.Path]; !ok || o != e {
				same = false
				break
			}
		}
		if same {
			return nil
		}
	}
	return x.SaveScanCache(ctx, nil, StatsByDir(entries), nil, nil)
}

// SaveScanCache saves the stat cache a scan that started from old leaves:
// when dirs is nil, exactly the entries of byDir; otherwise old's entries
// of every directory not in dirs, and byDir's of those in dirs (byDir's
// other directories are ignored), dirs naming every directory whose
// entries differ from old's. byDir holds each directory's entries ("" for
// the root) sorted by path, as a scan finds them: they are encoded from
// there, never copied (StatsByDir groups a flat list). It fails, writing
// nothing, when an entry is not in the directory it is given under. m
// (nil: none) is the manifest the scan took, which holds exactly the
// cache's files: the cache then records its hash. When the cache is still
// old (no other process saved one since), only the rows of dirs' buckets
// are written.
func (x *Index) SaveScanCache(ctx context.Context, old *ScanCache, byDir map[string][]StatEntry, dirs map[string]bool, m *Manifest) error {
	var of cas.ID
	if m != nil {
		of = m.hash()
	}
	byDir, err := checkDirs(byDir, dirs)
	if err != nil {
		return fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	err = x.writeSpilling(ctx, func(tx *sql.Tx) error {
		var gen int64
		var data []byte
		err := tx.QueryRowContext(ctx, `SELECT data FROM statcache WHERE id = 1`).Scan(&data)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil {
			gen = headerGen(data)
		}
		bp := planBuckets(old, byDir, dirs, gen)
		if bp.rewrite {
			if _, err := tx.ExecContext(ctx, `DELETE FROM statcache WHERE id < 0`); err != nil {
				return err
			}
		}
		if err := bp.write(ctx, tx, old, byDir); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO statcache (id, data) VALUES (1, ?)`, encodeStats(nil, of, gen+1))
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	return nil
}

// bucketPlan is which stat cache buckets a save writes, and what each
// holds then.
type bucketPlan struct {
	rewrite bool             // every bucket row is deleted first
	kept    map[int][]string // old's directories not in dirs, by bucket
	fresh   map[int][]string // byDir's directories, by bucket
	dirty   map[int]bool     // the buckets to write
}

// planBuckets plans a save of byDir over old, whose dirs are the
// directories scanned (nil: all), on a cache of generation gen. The cache
// is rewritten whole unless old is what it holds (same generation, every
// directory in its own bucket) and the scan names the directories it
// covered; then only their buckets are written.
func planBuckets(old *ScanCache, byDir map[string][]StatEntry, dirs map[string]bool, gen int64) bucketPlan {
	bp := bucketPlan{kept: map[int][]string{}, fresh: map[int][]string{}, dirty: map[int]bool{}}
	if dirs != nil && old != nil {
		for d := range old.dirs {
			if !dirs[d] {
				b := dirBucket(d)
				bp.kept[b] = append(bp.kept[b], d)
			}
		}
	}
	bp.rewrite = old == nil || dirs == nil || gen == 0 || gen != old.gen || old.misplaced
	if bp.rewrite {
		for b := range bp.kept {
			bp.dirty[b] = true
		}
	} else {
		for d := range dirs {
			bp.dirty[dirBucket(d)] = true
		}
	}
	for d := range byDir {
		b := dirBucket(d)
		bp.dirty[b] = true
		bp.fresh[b] = append(bp.fresh[b], d)
	}
	return bp
}

// write writes each dirty bucket's row: old's spans of its kept
// directories, then its fresh ones encoded; a bucket left empty has no row.
func (bp bucketPlan) write(ctx context.Context, tx *sql.Tx, old *ScanCache, byDir map[string][]StatEntry) error {
	for b := range bp.dirty {
		var row []byte
		for _, d := range bp.kept[b] {
			for _, sp := range old.dirs[d] {
				row = append(row, sp...)
			}
		}
		for _, d := range bp.fresh[b] {
			row = append(row, encodeDir(byDir[d])...)
		}
		if len(row) == 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM statcache WHERE id = ?`, bucketRow(b)); err != nil {
				return err
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO statcache (id, data) VALUES (?, ?)`, bucketRow(b), row); err != nil {
			return err
		}
	}
	return nil
}

// StatsByDir returns entries by directory ("" for the root), each sorted
// by path: what SaveScanCache takes.
func StatsByDir(entries []StatEntry) map[string][]StatEntry {
	out := map[string][]StatEntry{}
	for _, e := range entries {
		d := dirOf(e.Path)
		out[d] = append(out[d], e)
	}
	for _, es := range out {
		slices.SortFunc(es, func(a, b StatEntry) int { return strings.Compare(a.Path, b.Path) })
	}
	return out
}

// checkDirs returns the directories of byDir that only names (all when
// only is nil) and that hold entries. Each must hold only entries of its
// own directory (an error otherwise); one not sorted by path is replaced
// by a sorted copy, byDir itself left as it is.
func checkDirs(byDir map[string][]StatEntry, only map[string]bool) (map[string][]StatEntry, error) {
	out := make(map[string][]StatEntry, len(byDir))
	for d, es := range byDir {
		if len(es) == 0 || only != nil && !only[d] {
			continue
		}
		sorted := true
		for i := range es {
			if dirOf(es[i].Path) != d {
				return nil, fmt.Errorf("entry %q given under directory %q", es[i].Path, d)
			}
			if i > 0 && es[i-1].Path >= es[i].Path {
				sorted = false
			}
		}
		if !sorted {
			es = slices.Clone(es)
			slices.SortFunc(es, func(a, b StatEntry) int { return strings.Compare(a.Path, b.Path) })
			es = slices.CompactFunc(es, func(a, b StatEntry) bool { return a.Path == b.Path })
		}
		out[d] = es
	}
	return out, nil
}
