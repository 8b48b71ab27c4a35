package checkpoints

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/ckpt/ckpt/cas"
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
