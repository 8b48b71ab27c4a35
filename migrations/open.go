package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"modernc.org/sqlite"
)

// openRetry bounds how long Open waits out other processes setting up the
// same database file.
const openRetry = 30 * time.Second

// Open opens the SQLite database named by dsn (driver "sqlite"), runs check
// (which should verify that the DSN's pragmas took effect) and applies set.
// Switching a new file to WAL needs an exclusive lock and fails at once with
// SQLITE_BUSY, without waiting on busy_timeout, when several processes
// open the same new file together (agent hooks do); Open retries such
// failures with a growing pause for up to 30 s. The pool closes on error.
func Open(ctx context.Context, dsn string, set Set, check func(context.Context, *sql.DB) error) (*sql.DB, error) {
	deadline := time.Now().Add(openRetry)
	pause := time.Millisecond
	for {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		err = check(ctx, db)
		if err == nil {
			err = Apply(ctx, db, set)
		}
		if err == nil {
			return db, nil
		}
		db.Close()
		if !IsBusy(err) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (while waiting: %v)", ctx.Err(), err)
		case <-time.After(pause):
		}
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
}

// IsBusy reports whether err is SQLite's "database is locked" or "table is
// locked" (SQLITE_BUSY, SQLITE_LOCKED and their extended codes).
func IsBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
		return true
	}
	return false
}

// Created reports whether the file at path already holds a SQLite database
// (at least its 100-byte header). Settings that only matter when a
// database is created, such as auto_vacuum, can then be left out of the
// DSN: the driver applies them on every new connection, and
// "PRAGMA auto_vacuum = incremental" on an existing auto-vacuum database
// is a write transaction (it rewrites the header's incremental flag), which
// costs each open a WAL commit and its fsyncs.
func Created(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() >= 100
}

// Create makes the SQLite database at path, unless Created says it exists,
// with the given page size, incremental auto-vacuum and WAL, in that order
// on one connection. The driver's DSN keys cannot do this: it applies
// auto_vacuum first, and on a new file that pragma is a write that fixes
// the default 4 KiB page size before any page_size pragma runs. Several
// processes may create the same file at once; a busy database is waited
// out for up to 30 s.
func Create(ctx context.Context, path string, pageSize int) error {
	deadline := time.Now().Add(openRetry)
	pause := time.Millisecond
	for !Created(path) {
		err := create(ctx, path, pageSize)
		if err == nil {
			return nil
		}
		if !IsBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("migrations: create %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
	return nil
}

func create(ctx context.Context, path string, pageSize int) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{fmt.Sprintf("PRAGMA page_size = %d", pageSize), "PRAGMA auto_vacuum = INCREMENTAL"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	var mode string
	return conn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
}
