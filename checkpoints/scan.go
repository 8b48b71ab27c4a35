package checkpoints

import (
	"context"
	"database/sql"
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
		var scanned bool
		if err := tx.QueryRowContext(ctx, `SELECT scanned FROM turns WHERE id = ?`, turnID).Scan(&scanned); err != nil {
			return notFound(err)
		}
		if !scanned {
			return nil
		}
		m = &Manifest{}
		rows, err := tx.QueryContext(ctx, `SELECT path, blob, mode, size FROM manifest WHERE turn_id = ? ORDER BY path`, turnID)
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
		rows, err = tx.QueryContext(ctx, `SELECT path, reason FROM manifest_skips WHERE turn_id = ? ORDER BY path`, turnID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s ScanSkip
			if err := rows.Scan(&s.Path, &s.Reason); err != nil {
				return err
			}
			m.Skips = append(m.Skips, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: manifest: %w", err)
	}
	return m, nil
}

func insertManifest(ctx context.Context, tx *sql.Tx, turnID int64, m *Manifest) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO manifest (turn_id, path, blob, mode, size) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, e := range m.Files {
		if _, err := st.ExecContext(ctx, turnID, e.Path, e.Blob[:], uint32(e.Mode), e.Size); err != nil {
			return err
		}
	}
	for _, s := range m.Skips {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO manifest_skips (turn_id, path, reason) VALUES (?, ?, ?)`, turnID, s.Path, s.Reason); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE turns SET scanned = 1 WHERE id = ?`, turnID)
	return err
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
	out := map[string]StatEntry{}
	rows, err := x.db.QueryContext(ctx, `SELECT path, size, mtime, ctime, inode, mode, blob, checked FROM statcache`)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e StatEntry
		var b []byte
		var mode uint32
		var inode int64
		if err := rows.Scan(&e.Path, &e.Size, &e.MTime, &e.CTime, &inode, &mode, &b, &e.Checked); err != nil {
			return nil, fmt.Errorf("checkpoints: stat cache: %w", err)
		}
		id, err := scanBlob(b)
		if err != nil || id == nil {
			continue
		}
		e.Blob, e.Mode, e.Inode = *id, fs.FileMode(mode), uint64(inode)
		out[e.Path] = e
	}
	return out, rows.Err()
}

// UpdateStatCache makes the stat cache hold exactly entries, writing only
// what differs from old (the cache as it was read): an unchanged re-scan
// writes nothing.
func (x *Index) UpdateStatCache(ctx context.Context, old map[string]StatEntry, entries []StatEntry) error {
	keep := make(map[string]bool, len(entries))
	var changed []StatEntry
	for _, e := range entries {
		keep[e.Path] = true
		if o, ok := old[e.Path]; !ok || o != e {
			changed = append(changed, e)
		}
	}
	var gone []string
	for p := range old {
		if !keep[p] {
			gone = append(gone, p)
		}
	}
	if len(changed) == 0 && len(gone) == 0 {
		return nil
	}
	err := x.write(ctx, func(tx *sql.Tx) error {
		for _, p := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM statcache WHERE path = ?`, p); err != nil {
				return err
			}
		}
		st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO statcache (path, size, mtime, ctime, inode, mode, blob, checked) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, e := range changed {
			if _, err := st.ExecContext(ctx, e.Path, e.Size, e.MTime, e.CTime, int64(e.Inode), uint32(e.Mode), e.Blob[:], e.Checked); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoints: stat cache: %w", err)
	}
	return nil
}
