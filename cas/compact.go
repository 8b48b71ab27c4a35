package cas

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

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
	return d.writeConn(ctx, func(conn *sql.Conn) error { return migrations.Vacuum(ctx, conn) })
}

// writeConn runs fn on a connection of its own while this process's
// writers wait (wmu): compaction and a repack's VACUUM rewrite the file.
func (d *Disk) writeConn(ctx context.Context, fn func(*sql.Conn) error) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// Footprint is what blobs.db takes on disk beyond the blobs' own bytes.
type Footprint struct {
	// Reclaimable is what the next Compact gives back: the free pages, and
	// the WAL beyond the pages a checkpoint moves into the database file.
	Reclaimable int64
	// Overhead is what the pages in use take beyond the stored bytes of the
	// blobs held inline: every blob's row, the indexes, partly filled
	// pages. It shrinks with the rows, so each blob carries a share of it.
	Overhead int64
	// Rows counts the blobs blobs.db records, inline or as files.
	Rows int64
}

// Footprint measures blobs.db: what compaction would give back, and SQLite's
// overhead per blob, for a quota on the store's bytes on disk. It reads the
// database as one snapshot and changes nothing.
func (d *Disk) Footprint(ctx context.Context) (Footprint, error) {
	if d.closed.Load() {
		return Footprint{}, fmt.Errorf("cas: footprint: %w", ErrClosed)
	}
	var fp Footprint
	var pages, free, size, inline int64
	err := d.db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count),
		(SELECT freelist_count FROM pragma_freelist_count), (SELECT page_size FROM pragma_page_size),
		count(*), coalesce(sum(CASE WHEN data IS NULL THEN 0 ELSE stored END), 0) FROM blobs`).Scan(&pages, &free, &size, &fp.Rows, &inline)
	if err != nil {
		return Footprint{}, fmt.Errorf("cas: footprint: %w", err)
	}
	live := (pages - free) * size
	var onDisk int64
	for _, name := range []string{"blobs.db", "blobs.db-wal"} {
		if fi, err := os.Stat(filepath.Join(d.dir, name)); err == nil {
			onDisk += fi.Size()
		}
	}
	fp.Reclaimable = max(onDisk-live, 0)
	fp.Overhead = max(live-inline, 0)
	return fp, nil
}
