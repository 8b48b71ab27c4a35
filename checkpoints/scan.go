package checkpoints

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"time"

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
	err := func() error {
		rows, err := tx.QueryContext(ctx, `SELECT path, blob, mode, size FROM manifest_files WHERE manifest_id = ? ORDER BY path`, mid)
		if err != nil {
			return err
		}
		for rows.Next() {
			var e ManifestEntry
			var b []byte
			var mode uint32
			if err := rows.Scan(&e.Path, &b, &mode, &e.Size); err != nil {
				rows.Close()
				return err
			}
			id, err := scanBlob(b)
			if err != nil || id == nil {
				rows.Close()
				return fmt.Errorf("manifest %s: bad blob id", e.Path)
			}
			e.Blob, e.Mode = *id, fs.FileMode(mode)
			m.Files = append(m.Files, e)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT path, reason FROM manifest_skips WHERE manifest_id = ? ORDER BY path`, mid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var sk ScanSkip
			if err := rows.Scan(&sk.Path, &sk.Reason); err != nil {
				return err
			}
			m.Skips = append(m.Skips, sk)
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}
	return m, nil
}

// hash identifies a manifest's content (files and skips, in order).
func (m *Manifest) hash() cas.ID {
	var b []byte
	for _, e := range m.Files {
		b = binary.AppendUvarint(b, uint64(len(e.Path)))
		b = append(b, e.Path...)
		b = append(b, e.Blob[:]...)
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendVarint(b, e.Size)
	}
	b = append(b, 0xff) // files end
	for _, sk := range m.Skips {
		b = binary.AppendUvarint(b, uint64(len(sk.Path)))
		b = append(b, sk.Path...)
		b = binary.AppendUvarint(b, uint64(len(sk.Reason)))
		b = append(b, sk.Reason...)
	}
	return cas.Sum(b)
}

// insertManifest records m as turn turnID's manifest, sharing the rows of
// an identical manifest already stored (an unchanged workspace writes
// nothing but the turn's reference).
func insertManifest(ctx context.Context, tx *sql.Tx, turnID int64, m *Manifest) error {
	h := m.hash()
	var mid int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM manifests WHERE hash = ?`, h[:]).Scan(&mid)
	if errors.Is(err, sql.ErrNoRows) {
		res, err := tx.ExecContext(ctx, `INSERT INTO manifests (hash) VALUES (?)`, h[:])
		if err != nil {
			return err
		}
		if mid, err = res.LastInsertId(); err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO manifest_files (manifest_id, path, blob, mode, size) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, e := range m.Files {
			if _, err := st.ExecContext(ctx, mid, e.Path, e.Blob[:], uint32(e.Mode), e.Size); err != nil {
				return err
			}
		}
		for _, sk := range m.Skips {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO manifest_skips (manifest_id, path, reason) VALUES (?, ?, ?)`, mid, sk.Path, sk.Reason); err != nil {
				return err
			}
		}
	} else if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE turns SET manifest_id = ? WHERE id = ?`, mid, turnID)
	return err
}

// dropUnusedManifests deletes manifests no turn refers to any more.
func dropUnusedManifests(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		`DELETE FROM manifest_files WHERE manifest_id NOT IN (SELECT manifest_id FROM turns WHERE manifest_id IS NOT NULL)`,
		`DELETE FROM manifest_skips WHERE manifest_id NOT IN (SELECT manifest_id FROM turns WHERE manifest_id IS NOT NULL)`,
		`DELETE FROM manifests WHERE id NOT IN (SELECT manifest_id FROM turns WHERE manifest_id IS NOT NULL)`,
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
	var out map[string]StatEntry
	err := x.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = statCache(ctx, tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	return out, nil
}

func statCache(ctx context.Context, tx *sql.Tx) (map[string]StatEntry, error) {
	var data []byte
	err := tx.QueryRowContext(ctx, `SELECT data FROM statcache WHERE id = 1`).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return map[string]StatEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeStats(data), nil
}

// UpdateStatCache makes the stat cache hold exactly entries. It writes
// nothing when they equal old (the cache as it was read): an unchanged
// re-scan. The cache is one encoded row: loading 10,000 entries is one
// read, not 10,000 row steps.
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
	_, err := x.db.ExecContext(ctx, `INSERT OR REPLACE INTO statcache (id, data) VALUES (1, ?)`, encodeStats(entries))
	if err != nil {
		return fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	return nil
}

// encodeStats packs entries: per entry the path (length-prefixed), size,
// mtime, ctime, inode, mode, checked as varints, and the 32-byte blob id.
func encodeStats(entries []StatEntry) []byte {
	b := make([]byte, 0, len(entries)*80)
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

// decodeStats unpacks encodeStats; it stops at the first malformed entry
// (the cache is advisory: a lost entry only costs a re-read).
func decodeStats(b []byte) map[string]StatEntry {
	out := map[string]StatEntry{}
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	sv := func() (int64, bool) {
		v, n := binary.Varint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	for len(b) > 0 {
		var e StatEntry
		n, ok := uv()
		if !ok || uint64(len(b)) < n {
			break
		}
		e.Path, b = string(b[:n]), b[n:]
		var mode uint64
		var ok2, ok3, ok4, ok5, ok6, ok7 bool
		e.Size, ok2 = sv()
		e.MTime, ok3 = sv()
		e.CTime, ok4 = sv()
		e.Inode, ok5 = uv()
		mode, ok6 = uv()
		e.Checked, ok7 = sv()
		if !(ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || len(b) < len(e.Blob) {
			break
		}
		e.Mode = fs.FileMode(mode)
		copy(e.Blob[:], b)
		b = b[len(e.Blob):]
		out[e.Path] = e
	}
	return out
}
