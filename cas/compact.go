package cas

import (
	"context"
	"fmt"

	"github.com/ckpt/ckpt/migrations"
)

// Compact gives the space of deleted blobs back to the file system: it
// truncates blobs.db by its free pages and truncates the WAL
// (migrations.Vacuum: time proportional to the pages freed). A database
// created before ckpt kept it in incremental auto-vacuum mode is converted
// first, by one VACUUM: that rewrites the whole file once, and needs as
// much free disk space as the file's live pages take. Deleting rows alone
// leaves SQLite holding their pages, so without Compact a store's file
// never shrinks.
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
	return migrations.Vacuum(ctx, conn)
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
