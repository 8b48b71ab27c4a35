package cas

import (
	"context"
	"fmt"
)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// Compact gives the space of deleted blobs back to the file system: it
// truncates blobs.db by its free pages (PRAGMA incremental_vacuum) and
// truncates the WAL (wal_checkpoint(TRUNCATE)). A database created before
// ckpt kept it in incremental auto-vacuum mode is converted first, by one
// VACUUM: that rewrites the whole file once, and needs as much free disk
// space as the file's live pages take. Deleting rows alone leaves SQLite
// holding their pages, so without Compact a store's file never shrinks.
//
// It is safe while other processes read and write: each step is an
// ordinary SQLite write that waits out the others (busy_timeout). A WAL
// that readers still use is left as long as they need it, not an error.
func (d *Disk) Compact(ctx context.Context) error {
	if d.closed.Load() {
		return fmt.Errorf("cas: compact: %w", ErrClosed)
	}
	if err := d.compact(ctx); err != nil {
		return fmt.Errorf("cas: compact %s: %w", d.dir, err)
	}
	return nil
}

func (d *Disk) compact(ctx context.Context) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var mode int
	if err := conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return err
	}
	if mode != autoVacuumIncremental {
		if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
	}
	// incremental_vacuum returns no rows but must be stepped to run.
	rows, err := conn.QueryContext(ctx, `PRAGMA incremental_vacuum`)
	if err != nil {
		return fmt.Errorf("incremental vacuum: %w", err)
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("incremental vacuum: %w", err)
	}
	var busy, logPages, done int
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// FreeBytes returns the bytes of blobs.db's free pages: space deleted
// blobs left that the next Compact gives back.
func (d *Disk) FreeBytes(ctx context.Context) (int64, error) {
	if d.closed.Load() {
		return 0, fmt.Errorf("cas: free bytes: %w", ErrClosed)
	}
	var pages, size int64
	if err := d.db.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&pages); err != nil {
		return 0, fmt.Errorf("cas: free bytes: %w", err)
	}
	if err := d.db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
		return 0, fmt.Errorf("cas: free bytes: %w", err)
	}
	return pages * size, nil
}
