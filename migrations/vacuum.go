package migrations

import (
	"context"
	"database/sql"
	"fmt"
)

// PRAGMA auto_vacuum's values.
const (
	autoVacuumNone        = 0
	autoVacuumFull        = 1
	autoVacuumIncremental = 2
)

// Vacuum gives the free pages of conn's database back to the file system,
// leaves the database in incremental auto-vacuum mode and truncates its
// WAL (wal_checkpoint(TRUNCATE); a WAL that readers still use is left as
// long as they need it, not an error). Its cost is proportional to the
// pages it frees, never to their square:
//
//   - PRAGMA incremental_vacuum is not used: it removes each free page at
//     the end of the file with an exact search of the free list, so
//     freeing F pages costs F²/2 page comparisons (43 s of CPU to give
//     back 42 MiB of 512-byte pages).
//   - When at least half the file is free, one VACUUM rewrites the live
//     pages (no more than the free ones) into a new file. It needs free
//     disk space as large as the live data.
//   - Otherwise the database is switched to full auto-vacuum for one
//     commit, and back: a full auto-vacuum commit moves the live pages at
//     the end of the file into free ones taken from the head of the free
//     list, drops the rest of the list whole and truncates the file, in
//     time linear in the pages it moves and frees. A crash between the two
//     switches leaves a database in full auto-vacuum mode, which works
//     (every commit then vacuums) and which the next Vacuum switches back.
//   - A database in neither auto-vacuum mode (one created before ckpt set
//     it) is converted by one VACUUM.
//
// It is safe while other processes read and write: each step is an
// ordinary SQLite write that waits out the others (busy_timeout).
func Vacuum(ctx context.Context, conn *sql.Conn) error {
	var mode, free, pages int64
	if err := conn.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return err
	}
	switch {
	case mode == autoVacuumNone || (free > 0 && 2*free >= pages):
		if mode != autoVacuumIncremental {
			if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
				return err
			}
		}
		if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
	case free > 0:
		// The commit that writes the full-vacuum flag is itself the first
		// full auto-vacuum commit.
		if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = FULL`); err != nil {
			return fmt.Errorf("auto-vacuum: %w", err)
		}
		fallthrough
	case mode == autoVacuumFull:
		if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
			return fmt.Errorf("auto-vacuum: %w", err)
		}
	}
	var busy, logPages, done int
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
