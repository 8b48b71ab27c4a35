package checkpoints

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/ckpt/ckpt/cas"
	"github.com/zeebo/blake3"
)

// ManifestEntry is one file of a scanned turn's manifest.
type ManifestEntry struct {
	Path string
	Blob cas.ID
	Mode fs.FileMode
	Size int64
}

// ScanSkip is a path a scan did not record: a file over the size limit or
// a directory it did not walk. A rewind never deletes anything there.
type ScanSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Manifest is the state of the workspace a scan saw when a turn opened.
type Manifest struct {
	Files []ManifestEntry // sorted by path
	Skips []ScanSkip
	// Since, if not nil, is how Files differ from the files of the
	// manifest whose hash is Since.Prev (the one the scan's stat cache
	// came from: ScanCache). When that is the previous scanned turn's
	// manifest, the delta is stored without reading it.
	Since *ManifestChanges
}

// ManifestChanges is how a manifest's files differ from those of manifest
// Prev: entries new or changed, and paths gone, each sorted by path.
type ManifestChanges struct {
	Prev  cas.ID
	Files []ManifestEntry
	Gone  []string
}

// Manifest returns turn turnID's manifest, or nil when the turn was not
// scanned.
func (x *Index) Manifest(ctx context.Context, turnID int64) (*Manifest, error) {
	var m *Manifest
	err := x.read(ctx, func(tx *sql.Tx) error {
		var mid sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT manifest_id FROM turns WHERE id = ?`, turnID).Scan(&mid); err != nil {
			return notFound(err)
		}
		if !mid.Valid {
			return nil
		}
		var err error
		m, err = manifestByID(ctx, tx, mid.Int64)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: manifest: %w", err)
	}
	return m, nil
}

// ScannedTurn is a scanned turn: the clock value it opened at and its
// manifest's id (turns with identical manifests share one).
type ScannedTurn struct {
	Seq        int64
	ManifestID int64
}

// ScannedSince returns every turn opened at or after clock value seq that
// was scanned, hidden turns included, oldest first.
func (x *Index) ScannedSince(ctx context.Context, seq int64) ([]ScannedTurn, error) {
	var out []ScannedTurn
	err := x.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, manifest_id FROM turns WHERE manifest_id IS NOT NULL AND seq >= ? ORDER BY seq`, seq)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st ScannedTurn
			if err := rows.Scan(&st.Seq, &st.ManifestID); err != nil {
				return err
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: scanned since %d: %w", seq, err)
	}
	return out, nil
}

// TurnEnds returns the manifest of scanned turn turnID and the one that
// recorded how the turn ended: the manifest of the next turn of the
// active history, when that turn was scanned too. end is nil when there is
// no such manifest (the turn is the open one, or the next was not
// scanned); start is nil when the turn was not scanned. Turns with
// identical manifests share one: then nothing is read, and start and end
// are the same empty Manifest (they do not differ).
func (x *Index) TurnEnds(ctx context.Context, turnID int64) (start, end *Manifest, err error) {
	err = x.read(ctx, func(tx *sql.Tx) error {
		var seq int64
		var mid sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT seq, manifest_id FROM turns WHERE id = ?`, turnID).Scan(&seq, &mid); err != nil {
			return notFound(err)
		}
		if !mid.Valid {
			return nil
		}
		var next sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT manifest_id FROM turns WHERE seq > ? AND hidden_by IS NULL ORDER BY seq LIMIT 1`, seq).Scan(&next)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if next.Valid && next.Int64 == mid.Int64 {
			start = &Manifest{}
			end = start
			return nil
		}
		if start, err = manifestByID(ctx, tx, mid.Int64); err != nil {
			return err
		}
		if next.Valid {
			end, err = manifestByID(ctx, tx, next.Int64)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoints: turn %d's manifests: %w", turnID, err)
	}
	return start, end, nil
}

// ManifestDiff is a path whose entry differs between two manifests (its
// blob or mode): From and To are its entries, nil on a side that lacks it.
type ManifestDiff struct {
	Path     string
	From, To *ManifestEntry
}

// DiffManifests returns, by path, the paths whose entries from and to
// disagree on.
func DiffManifests(from, to *Manifest) []ManifestDiff {
	var out []ManifestDiff
	a, b := from.Files, to.Files // both sorted by path
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].Path < b[0].Path:
			out = append(out, ManifestDiff{Path: a[0].Path, From: &a[0]})
			a = a[1:]
		case len(a) == 0 || b[0].Path < a[0].Path:
			out = append(out, ManifestDiff{Path: b[0].Path, To: &b[0]})
			b = b[1:]
		default:
			if a[0].Blob != b[0].Blob || a[0].Mode.Perm() != b[0].Mode.Perm() {
				out = append(out, ManifestDiff{Path: a[0].Path, From: &a[0], To: &b[0]})
			}
			a, b = a[1:], b[1:]
		}
	}
	return out
}

// TurnDiff is how a scanned turn's manifest and the one that recorded its
// end (see TurnEnds) differ, with the paths each scan skipped.
type TurnDiff struct {
	Files     []ManifestDiff
	FromSkips []ScanSkip
	ToSkips   []ScanSkip
}

// TurnDiff returns how scanned turn turnID's manifest and the one that
// recorded its end differ; ended is false when the turn was not scanned
// or no manifest recorded its end (see TurnEnds). For listings: when the
// end's manifest is stored as a delta against the turn's (as consecutive
// scans are), it reads only the delta's paths, without checking the
// manifests' hashes as TurnEnds does; a caller that deletes by what a
// manifest lacks reads TurnEnds.
func (x *Index) TurnDiff(ctx context.Context, turnID int64) (d TurnDiff, ended bool, err error) {
	err = x.read(ctx, func(tx *sql.Tx) error {
		var seq int64
		var mid sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT seq, manifest_id FROM turns WHERE id = ?`, turnID).Scan(&seq, &mid); err != nil {
			return notFound(err)
		}
		if !mid.Valid {
			return nil
		}
		var next, base sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT t.manifest_id, m.base FROM turns t LEFT JOIN manifests m ON m.id = t.manifest_id
			WHERE t.seq > ? AND t.hidden_by IS NULL ORDER BY t.seq LIMIT 1`, seq).Scan(&next, &base)
		if errors.Is(err, sql.ErrNoRows) || err == nil && !next.Valid {
			return nil
		}
		if err != nil {
			return err
		}
		ended = true
		if next.Int64 == mid.Int64 {
			return nil
		}
		if d.FromSkips, err = manifestSkips(ctx, tx, mid.Int64); err != nil {
			return err
		}
		if d.ToSkips, err = manifestSkips(ctx, tx, next.Int64); err != nil {
			return err
		}
		if !base.Valid || base.Int64 != mid.Int64 {
			from, err := manifestByID(ctx, tx, mid.Int64)
			if err != nil {
				return err
			}
			to, err := manifestByID(ctx, tx, next.Int64)
			if err != nil {
				return err
			}
			d.Files = DiffManifests(from, to)
			return nil
		}
		// The delta's rows are the paths that differ; their entries in
		// the turn's manifest are read by path.
		var rows []storedRow
		if err := manifestRows(ctx, tx, next.Int64, func(r storedRow) { rows = append(rows, r) }); err != nil {
			return err
		}
		from, err := manifestEntries(ctx, tx, mid.Int64, rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			md := ManifestDiff{Path: r.e.Path}
			if f, ok := from[r.e.Path]; ok {
				md.From = &f
			}
			if !r.gone {
				e := r.e
				md.To = &e
			}
			if md.From != nil && md.To != nil && md.From.Blob == md.To.Blob && md.From.Mode.Perm() == md.To.Mode.Perm() {
				continue
			}
			d.Files = append(d.Files, md)
		}
		return nil
	})
	if err != nil {
		return TurnDiff{}, false, fmt.Errorf("checkpoints: turn %d's manifests: %w", turnID, err)
	}
	return d, ended, nil
}

// manifestSkips returns manifest mid's skips, by path.
func manifestSkips(ctx context.Context, tx *sql.Tx, mid int64) ([]ScanSkip, error) {
	rows, err := tx.QueryContext(ctx, `SELECT path, reason FROM manifest_skips WHERE manifest_id = ? ORDER BY path`, mid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ScanSkip
	for rows.Next() {
		var sk ScanSkip
		if err := rows.Scan(&sk.Path, &sk.Reason); err != nil {
			return nil, err
		}
		out = append(out, sk)
	}
	return out, rows.Err()
}

// manifestEntries returns the entries of manifest mid (its chain of
// deltas applied) at the paths of rows, one seek per path and manifest
// of the chain.
func manifestEntries(ctx context.Context, tx *sql.Tx, mid int64, rows []storedRow) (map[string]ManifestEntry, error) {
	hexed := make([]string, len(rows))
	for i, r := range rows {
		hexed[i] = hex.EncodeToString([]byte(r.e.Path))
	}
	arg, err := json.Marshal(hexed)
	if err != nil {
		return nil, err
	}
	q, err := tx.QueryContext(ctx, fmt.Sprintf(manifestChainSQL, `SELECT 0, ?1, 0`)+`
		SELECT path, blob, mode, size, gone FROM (
			SELECT f.path AS path, f.blob AS blob, f.mode AS mode, f.size AS size, f.gone AS gone, min(c.depth)
			FROM (SELECT CAST(unhex(value) AS TEXT) AS path FROM json_each(?2)) p
			CROSS JOIN chain c JOIN manifest_files f ON f.manifest_id = c.mid AND f.path = p.path
			GROUP BY f.path)`, mid, string(arg))
	if err != nil {
		return nil, err
	}
	defer q.Close()
	out := map[string]ManifestEntry{}
	for q.Next() {
		var e ManifestEntry
		var b []byte
		var mode uint32
		var gone bool
		if err := q.Scan(&e.Path, &b, &mode, &e.Size, &gone); err != nil {
			return nil, err
		}
		if gone {
			continue
		}
		id, err := scanBlob(b)
		if err != nil || id == nil {
			return nil, fmt.Errorf("manifest %s: bad blob id", e.Path)
		}
		e.Blob, e.Mode = *id, fs.FileMode(mode)
		out[e.Path] = e
	}
	return out, q.Err()
}

// ManifestByID returns the manifest with id (see ScannedTurn), or an error
// wrapping ErrNotFound.
func (x *Index) ManifestByID(ctx context.Context, id int64) (*Manifest, error) {
	var m *Manifest
	err := x.read(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM manifests WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		var err error
		m, err = manifestByID(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: manifest %d: %w", id, err)
	}
	return m, nil
}

func manifestByID(ctx context.Context, tx *sql.Tx, mid int64) (*Manifest, error) {
	m := &Manifest{}
	err := resolveManifest(ctx, tx, mid, func(e ManifestEntry, _ bool) {
		m.Files = append(m.Files, e)
	})
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT path, reason FROM manifest_skips WHERE manifest_id = ? ORDER BY path`, mid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var sk ScanSkip
		if err := rows.Scan(&sk.Path, &sk.Reason); err != nil {
			return nil, err
		}
		m.Skips = append(m.Skips, sk)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The rows must hash to the manifest's recorded hash: a damaged
	// page can lose or change rows without SQLite noticing, and a rewind
	// takes a path missing from a scanned turn's manifest as absent then
	// (and deletes it).
	var want []byte
	if err := tx.QueryRowContext(ctx, `SELECT hash FROM manifests WHERE id = ?`, mid).Scan(&want); err != nil {
		return nil, fmt.Errorf("manifest %d: %w", mid, notFound(err))
	}
	if h := m.hash(); string(want) != string(h[:]) {
		return nil, fmt.Errorf("damaged: its %d files and %d skips do not hash to the hash recorded for it", len(m.Files), len(m.Skips))
	}
	return m, nil
}

// Manifest storage. A manifest is stored whole (base NULL) or as a delta
// against base: a row for each path whose entry differs from base's, and a
// tombstone (gone = 1, empty blob) for each path base has and it lacks.
// Skips are stored whole with every manifest (they are few).
const (
	// maxManifestDepth bounds a delta chain: the next manifest is stored
	// whole, so a read applies at most this many deltas.
	maxManifestDepth = 16
)

// manifestChainSQL is the recursive CTE "chain(top, mid, depth)": for
// every start row (top, mid) of the SELECT that follows it in the
// caller's text, the manifests of mid's chain down to its whole manifest,
// depth 0 for mid itself.
const manifestChainSQL = `WITH RECURSIVE chain(top, mid, depth) AS (
	%s
	UNION ALL SELECT c.top, m.base, c.depth + 1 FROM chain c JOIN manifests m ON m.id = c.mid WHERE m.base IS NOT NULL
)`

// resolvedRowsSQL selects, after manifestChainSQL, each (top, path) row
// that decides path in top's manifest: the one nearest to top along the
// chain. A tombstone decides too (gone = 1: absent).
const resolvedRowsSQL = `SELECT c.top AS top, f.path AS path, f.blob AS blob, f.mode AS mode, f.size AS size, f.lost AS lost,
	f.gone AS gone, min(c.depth) FROM chain c JOIN manifest_files f ON f.manifest_id = c.mid GROUP BY c.top, f.path`

// resolveManifest calls fn, in path order, for every file of manifest mid
// with its lost flag, its chain of deltas applied: the deltas' rows (the
// nearest to mid decides a path) merged into the whole manifest's, read
// in the order of its primary key.
func resolveManifest(ctx context.Context, tx *sql.Tx, mid int64, fn func(e ManifestEntry, lost bool)) error {
	chain := []int64{mid}
	for {
		var base sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT base FROM manifests WHERE id = ?`, chain[len(chain)-1]).Scan(&base); err != nil {
			return fmt.Errorf("manifest %d: %w", chain[len(chain)-1], notFound(err))
		}
		if !base.Valid {
			break
		}
		if len(chain) > 4*maxManifestDepth {
			return fmt.Errorf("manifest %d: its chain of deltas does not end", mid)
		}
		chain = append(chain, base.Int64)
	}
	// The deltas' rows, nearest first: the first row of a path wins.
	over := map[string]storedRow{}
	for _, id := range chain[:len(chain)-1] {
		err := manifestRows(ctx, tx, id, func(r storedRow) {
			if _, ok := over[r.e.Path]; !ok {
				over[r.e.Path] = r
			}
		})
		if err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(over))
	for p := range over {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	emit := func(r storedRow) {
		if !r.gone {
			fn(r.e, r.lost)
		}
	}
	i := 0
	err := manifestRows(ctx, tx, chain[len(chain)-1], func(r storedRow) {
		for ; i < len(paths) && paths[i] < r.e.Path; i++ {
			emit(over[paths[i]])
		}
		if i < len(paths) && paths[i] == r.e.Path {
			emit(over[paths[i]])
			i++
			return
		}
		emit(r)
	})
	if err != nil {
		return err
	}
	for ; i < len(paths); i++ {
		emit(over[paths[i]])
	}
	return nil
}

// storedRow is one row of manifest_files.
type storedRow struct {
	e    ManifestEntry
	lost bool
	gone bool
}

// manifestRows calls fn for each row stored for manifest mid, in path
// order.
func manifestRows(ctx context.Context, tx *sql.Tx, mid int64, fn func(storedRow)) error {
	rows, err := tx.QueryContext(ctx, `SELECT path, blob, mode, size, lost, gone FROM manifest_files WHERE manifest_id = ? ORDER BY path`, mid)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r storedRow
		var b []byte
		var mode uint32
		if err := rows.Scan(&r.e.Path, &b, &mode, &r.e.Size, &r.lost, &r.gone); err != nil {
			return err
		}
		if !r.gone {
			id, err := scanBlob(b)
			if err != nil || id == nil {
				return fmt.Errorf("manifest %s: bad blob id", r.e.Path)
			}
			r.e.Blob = *id
		}
		r.e.Mode = fs.FileMode(mode)
		fn(r)
	}
	return rows.Err()
}

// hash identifies a manifest's content (files and skips, in order). The
// encoding is hashed 64 KiB at a time: whole, it would be ~70 bytes per
// file held twice per scan (7 MiB at 100,000 files).
func (m *Manifest) hash() cas.ID {
	h := blake3.New()
	b := make([]byte, 0, 64<<10)
	more := func() {
		if len(b) > cap(b)-4<<10 {
			h.Write(b)
			b = b[:0]
		}
	}
	for _, e := range m.Files {
		b = binary.AppendUvarint(b, uint64(len(e.Path)))
		b = append(b, e.Path...)
		b = append(b, e.Blob[:]...)
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendVarint(b, e.Size)
		more()
	}
	b = append(b, 0xff) // files end
	for _, sk := range m.Skips {
		b = binary.AppendUvarint(b, uint64(len(sk.Path)))
		b = append(b, sk.Path...)
		b = binary.AppendUvarint(b, uint64(len(sk.Reason)))
		b = append(b, sk.Reason...)
		more()
	}
	h.Write(b)
	return cas.ID(h.Sum(nil))
}

// insertManifest records m as turn turnID's manifest, sharing the rows of
// an identical manifest already stored (an unchanged workspace writes
// nothing but the turn's reference). A new manifest is stored as a delta
// against the manifest of the last scanned turn when that is shorter than
// half of m and the chain stays within maxManifestDepth, else whole.
func insertManifest(ctx context.Context, tx *sql.Tx, turnID int64, m *Manifest) error {
	mid, err := sameManifest(ctx, tx, m)
	if err != nil {
		return err
	}
	if mid != 0 {
		_, err = tx.ExecContext(ctx, `UPDATE turns SET manifest_id = ? WHERE id = ?`, mid, turnID)
		return err
	}
	h := m.hash()
	err = tx.QueryRowContext(ctx, `SELECT id FROM manifests WHERE hash = ?`, h[:]).Scan(&mid)
	if errors.Is(err, sql.ErrNoRows) {
		if mid, err = storeManifest(ctx, tx, h, m); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE turns SET manifest_id = ? WHERE id = ?`, mid, turnID)
	return err
}

// sameManifest returns the id of the stored manifest m equals without
// hashing m, when its Since says its files are those of manifest
// Since.Prev and that manifest is stored with m's skips (an unchanged
// re-scan), else 0.
func sameManifest(ctx context.Context, tx *sql.Tx, m *Manifest) (int64, error) {
	s := m.Since
	if s == nil || s.Prev.IsZero() || len(s.Files) > 0 || len(s.Gone) > 0 {
		return 0, nil
	}
	var mid int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM manifests WHERE hash = ?`, s.Prev[:]).Scan(&mid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT path, reason FROM manifest_skips WHERE manifest_id = ? ORDER BY path`, mid)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var sk ScanSkip
		if err := rows.Scan(&sk.Path, &sk.Reason); err != nil {
			return 0, err
		}
		if i >= len(m.Skips) || m.Skips[i] != sk {
			return 0, rows.Err()
		}
		i++
	}
	if err := rows.Err(); err != nil || i != len(m.Skips) {
		return 0, err
	}
	return mid, nil
}

// deltaRow is one row of a delta manifest: an entry, or a tombstone.
type deltaRow struct {
	e    ManifestEntry
	gone bool
}

// storeManifest writes m (content hash h) and returns its id.
func storeManifest(ctx context.Context, tx *sql.Tx, h cas.ID, m *Manifest) (int64, error) {
	var base, depth sql.NullInt64
	var baseHash []byte
	err := tx.QueryRowContext(ctx, `SELECT m.id, m.depth, m.hash FROM turns t JOIN manifests m ON m.id = t.manifest_id
		ORDER BY t.seq DESC LIMIT 1`).Scan(&base, &depth, &baseHash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	var delta []deltaRow
	switch {
	case !base.Valid || depth.Int64+1 > maxManifestDepth:
		base.Valid = false
	case m.Since != nil && bytes.Equal(baseHash, m.Since.Prev[:]):
		// The scan measured its changes against this very manifest.
		if len(m.Since.Files)+len(m.Since.Gone) > len(m.Files)/2 {
			base.Valid = false
			break
		}
		for _, e := range m.Since.Files {
			delta = append(delta, deltaRow{e: e})
		}
		for _, p := range m.Since.Gone {
			delta = append(delta, deltaRow{e: ManifestEntry{Path: p}, gone: true})
		}
	default:
		if delta, err = manifestDelta(ctx, tx, base.Int64, m.Files, len(m.Files)/2); err != nil {
			return 0, err
		}
		if delta == nil {
			base.Valid = false // too different: whole
		}
	}
	var res sql.Result
	if base.Valid {
		res, err = tx.ExecContext(ctx, `INSERT INTO manifests (hash, base, depth) VALUES (?, ?, ?)`, h[:], base.Int64, depth.Int64+1)
	} else {
		res, err = tx.ExecContext(ctx, `INSERT INTO manifests (hash) VALUES (?)`, h[:])
	}
	if err != nil {
		return 0, err
	}
	mid, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO manifest_files (manifest_id, path, blob, mode, size, gone) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	put := func(r deltaRow) error {
		blob := r.e.Blob[:]
		if r.gone {
			blob = []byte{}
		}
		_, err := st.ExecContext(ctx, mid, r.e.Path, blob, uint32(r.e.Mode), r.e.Size, r.gone)
		return err
	}
	if base.Valid {
		for _, r := range delta {
			if err := put(r); err != nil {
				return 0, err
			}
		}
	} else {
		for _, e := range m.Files {
			if err := put(deltaRow{e: e}); err != nil {
				return 0, err
			}
		}
	}
	for _, sk := range m.Skips {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO manifest_skips (manifest_id, path, reason) VALUES (?, ?, ?)`, mid, sk.Path, sk.Reason); err != nil {
			return 0, err
		}
	}
	return mid, nil
}

// manifestDelta returns the rows that turn manifest base into files
// (sorted by path), or nil when there would be more than limit of them. An
// entry base holds as lost is written again: the new manifest's is not.
func manifestDelta(ctx context.Context, tx *sql.Tx, base int64, files []ManifestEntry, limit int) ([]deltaRow, error) {
	delta := []deltaRow{}
	i := 0
	over := false
	err := resolveManifest(ctx, tx, base, func(b ManifestEntry, lost bool) {
		if over {
			return
		}
		for i < len(files) && files[i].Path < b.Path {
			delta = append(delta, deltaRow{e: files[i]})
			i++
		}
		switch {
		case i < len(files) && files[i].Path == b.Path:
			if files[i] != b || lost {
				delta = append(delta, deltaRow{e: files[i]})
			}
			i++
		default:
			delta = append(delta, deltaRow{e: ManifestEntry{Path: b.Path}, gone: true})
		}
		over = len(delta) > limit
	})
	if err != nil {
		return nil, err
	}
	for ; i < len(files) && !over; i++ {
		delta = append(delta, deltaRow{e: files[i]})
		over = len(delta) > limit
	}
	if over {
		return nil, nil
	}
	return delta, nil
}

// liveManifestsSQL is the recursive CTE "live(id)": the manifests a turn
// refers to and every manifest their deltas are built on.
const liveManifestsSQL = `WITH RECURSIVE live(id) AS (
	SELECT manifest_id FROM turns WHERE manifest_id IS NOT NULL
	UNION SELECT m.base FROM live l JOIN manifests m ON m.id = l.id WHERE m.base IS NOT NULL
)`

// dropUnusedManifests deletes manifests no turn refers to any more, keeping
// those a live delta is built on.
func dropUnusedManifests(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		liveManifestsSQL + ` DELETE FROM manifest_files WHERE manifest_id NOT IN (SELECT id FROM live)`,
		liveManifestsSQL + ` DELETE FROM manifest_skips WHERE manifest_id NOT IN (SELECT id FROM live)`,
		liveManifestsSQL + ` DELETE FROM manifests WHERE id NOT IN (SELECT id FROM live)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

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
	err = x.write(ctx, func(tx *sql.Tx) error {
		var gen int64
		var data []byte
		err := tx.QueryRowContext(ctx, `SELECT data FROM statcache WHERE id = 1`).Scan(&data)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil {
			gen = headerGen(data)
		}
		// The directories each bucket to write holds, and what to write
		// for each: new entries (byDir) or old's spans.
		kept := map[int][]string{} // old's directories not in dirs, by bucket
		if dirs != nil && old != nil {
			for d := range old.dirs {
				if !dirs[d] {
					b := dirBucket(d)
					kept[b] = append(kept[b], d)
				}
			}
		}
		dirty := map[int]bool{}
		if old == nil || dirs == nil || gen == 0 || gen != old.gen || old.misplaced {
			// Rewrite it all.
			if _, err := tx.ExecContext(ctx, `DELETE FROM statcache WHERE id < 0`); err != nil {
				return err
			}
			for b := range kept {
				dirty[b] = true
			}
		} else {
			for d := range dirs {
				dirty[dirBucket(d)] = true
			}
		}
		for d := range byDir {
			dirty[dirBucket(d)] = true
		}
		fresh := map[int][]string{}
		for d := range byDir {
			b := dirBucket(d)
			fresh[b] = append(fresh[b], d)
		}
		for b := range dirty {
			var row []byte
			for _, d := range kept[b] {
				for _, sp := range old.dirs[d] {
					row = append(row, sp...)
				}
			}
			for _, d := range fresh[b] {
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
		_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO statcache (id, data) VALUES (1, ?)`, encodeStats(nil, of, gen+1))
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoints: stat cache: %w", err)
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
