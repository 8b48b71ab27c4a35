package cas

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Delete implements Store. It deletes the row, then the object file if the
// blob has one; a crash in between leaves an orphan file, which is
// harmless (see doc.go).
func (d *Disk) Delete(ctx context.Context, id ID) error {
	if d.closed.Load() {
		return fmt.Errorf("cas: delete %s: %w", id.Short(), ErrClosed)
	}
	if err := d.delete(ctx, id); err != nil {
		return fmt.Errorf("cas: delete %s: %w", id.Short(), err)
	}
	return nil
}

func (d *Disk) delete(ctx context.Context, id ID) error {
	unlock, err := d.lockObjects()
	if err != nil {
		return err
	}
	defer unlock()
	var inFile bool
	err = d.update(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `DELETE FROM blobs WHERE `+byID+` RETURNING data IS NULL`, id).Scan(&inFile)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil || !inFile {
		return err
	}
	if err := os.Remove(d.objectPath(id)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// DeleteMany removes the blobs that are present among ids, a thousand to a
// transaction, and returns how many it removed and their stored bytes.
// Absent ids are skipped. It is what a collector uses: one Delete per blob
// would cost a durable commit each.
//
// A blob that is the delta base of a blob that stays (one not among ids, or
// one kept for this same reason) is kept: a collector that marks only what
// indexes reference never strands a live delta. Deltas go before their
// bases, so a chain wholly among ids goes entirely.
func (d *Disk) DeleteMany(ctx context.Context, ids []ID) (int, int64, error) {
	if d.closed.Load() {
		return 0, 0, fmt.Errorf("cas: delete: %w", ErrClosed)
	}
	unlock, err := d.lockObjects()
	if err != nil {
		return 0, 0, fmt.Errorf("cas: delete: %w", err)
	}
	defer unlock()
	ids, err = deepestFirst(ctx, d.db, ids)
	if err != nil {
		return 0, 0, fmt.Errorf("cas: delete: %w", err)
	}
	var n int
	var freed int64
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 1000)]
		ids = ids[len(chunk):]
		var files []ID
		err := d.update(ctx, func(tx *sql.Tx) error {
			files = files[:0]
			for _, id := range chunk {
				var inFile bool
				var stored int64
				err := tx.QueryRowContext(ctx, `DELETE FROM blobs WHERE `+byID+`
					AND NOT EXISTS (SELECT 1 FROM blobs d WHERE d.base = (SELECT k FROM blobs WHERE `+byID+`)) RETURNING data IS NULL, stored`, id).Scan(&inFile, &stored)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					return err
				}
				n++
				freed += stored
				if inFile {
					files = append(files, id)
				}
			}
			return nil
		})
		if err != nil {
			return n, freed, fmt.Errorf("cas: delete: %w", err)
		}
		for _, id := range files {
			if err := os.Remove(d.objectPath(id)); err != nil && !os.IsNotExist(err) {
				return n, freed, fmt.Errorf("cas: delete %s: %w", id.Short(), err)
			}
		}
	}
	return n, freed, nil
}

// deepestFirst returns ids ordered by delta depth, deepest first, so that
// every delta comes before its base.
func deepestFirst(ctx context.Context, db *sql.DB, ids []ID) ([]ID, error) {
	var any bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM blobs WHERE base IS NOT NULL)`).Scan(&any); err != nil || !any {
		return ids, err // no deltas: any order will do
	}
	depth := make(map[ID]int, len(ids))
	for _, id := range ids {
		var k int
		err := db.QueryRowContext(ctx, `SELECT CASE WHEN enc = 2 THEN depth ELSE 0 END FROM blobs WHERE `+byID, id).Scan(&k)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		depth[id] = k
	}
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b ID) int { return depth[b] - depth[a] })
	return out, nil
}

// Usage returns how many blobs the store holds and their stored bytes.
func (d *Disk) Usage(ctx context.Context) (int64, int64, error) {
	var n, stored int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(stored), 0) FROM blobs`).Scan(&n, &stored); err != nil {
		return 0, 0, fmt.Errorf("cas: usage: %w", err)
	}
	return n, stored, nil
}

// SweepObjects deletes object files that no row names: what a crash
// between moving a file in and committing its row, or between a delete's
// commit and its unlink, leaves behind. It holds the objects lock, under
// which every Put moves its file and commits its row, so no live file can
// look rowless to it. It returns the files removed and their bytes.
func (d *Disk) SweepObjects(ctx context.Context) (int, int64, error) {
	if d.closed.Load() {
		return 0, 0, fmt.Errorf("cas: sweep: %w", ErrClosed)
	}
	unlock, err := d.lockObjects()
	if err != nil {
		return 0, 0, fmt.Errorf("cas: sweep: %w", err)
	}
	defer unlock()
	root := filepath.Join(d.dir, "objects")
	subs, err := os.ReadDir(root)
	if err != nil {
		return 0, 0, fmt.Errorf("cas: sweep: %w", err)
	}
	var n int
	var freed int64
	for _, sub := range subs {
		if !sub.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(root, sub.Name()))
		if err != nil {
			return n, freed, fmt.Errorf("cas: sweep: %w", err)
		}
		for _, e := range ents {
			id, err := ParseID(e.Name())
			if err != nil || !e.Type().IsRegular() {
				continue // not ours to judge
			}
			ok, err := d.has(ctx, id)
			if err != nil {
				return n, freed, fmt.Errorf("cas: sweep: %w", err)
			}
			if ok {
				continue
			}
			p := filepath.Join(root, sub.Name(), e.Name())
			var size int64
			if fi, err := e.Info(); err == nil {
				size = fi.Size()
			}
			if err := os.Remove(p); err == nil {
				n++
				freed += size
			}
		}
	}
	return n, freed, nil
}
