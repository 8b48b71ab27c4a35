package checkpoints

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"

	"github.com/ckpt/ckpt/cas"
	"github.com/zeebo/blake3"
)

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
