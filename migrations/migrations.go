package migrations

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed index/*.sql cas/*.sql catalog/*.sql index/base/*.sql
var files embed.FS

// Errors returned by Apply.
var (
	// ErrTooNew is wrapped when the database was written by a newer schema
	// than this binary knows.
	ErrTooNew = errors.New("database schema is newer than this ckpt")
)

// Set names one schema set: a directory of numbered SQL files.
type Set struct {
	name string
}

// The schema sets ckpt ships.
var (
	// Index is the per-session index: checkpoints, file snapshots,
	// conversation and rewind journal.
	Index = Set{name: "index"}
	// CAS is the blob store's own database.
	CAS = Set{name: "cas"}
	// Catalog is the store's catalog of sessions: a cache of each
	// session's summary, rebuilt from the indexes when lost.
	Catalog = Set{name: "catalog"}
)

// String returns the set's name.
func (s Set) String() string { return s.name }

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// List returns the set's migrations in version order. It fails if a file is
// misnamed or two files share a number.
func (s Set) List() ([]Migration, error) {
	ents, err := fs.ReadDir(files, s.name)
	if err != nil {
		return nil, fmt.Errorf("migrations: read %s: %w", s.name, err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || rest == "" {
			return nil, fmt.Errorf("migrations: %s/%s: name must be NNNN_name.sql", s.name, name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations: %s: %s and %s share version %d", s.name, prev, name, v)
		}
		seen[v] = name
		b, err := files.ReadFile(path.Join(s.name, name))
		if err != nil {
			return nil, fmt.Errorf("migrations: read %s/%s: %w", s.name, name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// createMigrationsTable makes the table recording applied migrations.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name    TEXT NOT NULL,
		applied INTEGER NOT NULL
	)`

// useBase lets Apply create a new database from the set's base schema
// (tests turn it off to compare the two ways).
var useBase = true

// base returns the set's base schema with the highest version not above
// latest: a file base/NNNN.sql holding, in one script, the schema that
// migrations 1..NNNN build, written compactly. A new database is created
// from it in one transaction, and the rows recording migrations 1..NNNN
// are written as if each had run. Stored schema text takes pages (the
// CREATE statements with their comments, and the text ALTER TABLE appends,
// live in sqlite_master), and every index starts small; the base holds
// the same statements as SQLite stores them after the migrations, less
// comments and spacing, which a test checks. Databases that exist already
// are never touched by it.
func (s Set) base(latest int) (Migration, bool) {
	ents, err := fs.ReadDir(files, path.Join(s.name, "base"))
	if err != nil {
		return Migration{}, false
	}
	var best Migration
	for _, e := range ents {
		v, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".sql"))
		if err != nil || !strings.HasSuffix(e.Name(), ".sql") || v > latest || v <= best.Version {
			continue
		}
		b, err := files.ReadFile(path.Join(s.name, "base", e.Name()))
		if err != nil {
			continue
		}
		best = Migration{Version: v, Name: "base/" + e.Name(), SQL: string(b)}
	}
	return best, best.Version > 0
}

// applyBase creates the schema of a new database from base b and records
// migrations 1..b.Version, in one transaction. Another process that got
// there first leaves it nothing to do.
func applyBase(ctx context.Context, db *sql.DB, set Set, b Migration, ms []Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrations: %s %s: begin: %w", set, b.Name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("migrations: %s: create table: %w", set, err)
	}
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&done); err != nil {
		return fmt.Errorf("migrations: %s %s: %w", set, b.Name, err)
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, b.SQL); err != nil {
		return fmt.Errorf("migrations: %s %s: %w", set, b.Name, err)
	}
	for _, m := range ms {
		if m.Version > b.Version {
			break
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, strftime('%s','now'))`,
			m.Version, m.Name); err != nil {
			return fmt.Errorf("migrations: %s %s: record: %w", set, b.Name, err)
		}
	}
	if err := setUserVersion(ctx, tx, b.Version); err != nil {
		return fmt.Errorf("migrations: %s %s: record: %w", set, b.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrations: %s %s: commit: %w", set, b.Name, err)
	}
	return nil
}

// latestName returns the highest version among the set's file names,
// without reading the files (0 when it has none or one is misnamed: Apply
// then takes the long way, which reports the misnaming).
func (s Set) latestName() int {
	ents, err := fs.ReadDir(files, s.name)
	if err != nil {
		return 0
	}
	latest := 0
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return 0
		}
		latest = max(latest, v)
	}
	return latest
}

// setUserVersion records version in the database header, inside tx.
// PRAGMA takes no bound parameters; version is an int.
func setUserVersion(ctx context.Context, tx *sql.Tx, version int) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version))
	return err
}

// markVersion sets user_version on a database found current by its
// schema_migrations rows, re-checking them inside the write transaction.
func markVersion(ctx context.Context, db *sql.DB, set Set, latest int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrations: %s: user_version: %w", set, err)
	}
	defer tx.Rollback()
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("migrations: %s: user_version: %w", set, err)
	}
	if int(v.Int64) != latest {
		return nil // another process moved it meanwhile; the next Apply looks again
	}
	if err := setUserVersion(ctx, tx, latest); err != nil {
		return fmt.Errorf("migrations: %s: user_version: %w", set, err)
	}
	return tx.Commit()
}

// Latest returns the highest version the set embeds.
func (s Set) Latest() int {
	ms, err := s.List()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Version returns the highest migration version recorded in db, or 0 for a
// database that has none.
func Version(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("migrations: version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("migrations: version: %w", err)
	}
	return int(v.Int64), nil
}

// Apply brings db up to the latest version of set. Each pending migration
// runs in its own transaction together with the row recording it, so a
// crash leaves the database at a whole version. It is safe to call from
// several processes at once: the version is re-read inside each write
// transaction (the DSN is expected to carry _txlock=immediate), so a
// migration another process applied first is skipped. It returns an error
// wrapping ErrTooNew when the database is ahead of the binary.
//
// A database at the latest version costs one read of its header: every
// migration's transaction also sets the header's user_version to the
// version it records, and Apply returns at once when user_version is the
// binary's latest. A database migrated before user_version was kept (or
// one whose user_version disagrees) goes the long way, by
// schema_migrations, which stays the record; a current one found that way
// gets its user_version set, once.
func Apply(ctx context.Context, db *sql.DB, set Set) error {
	latest := set.latestName()
	var uv int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&uv); err != nil {
		return fmt.Errorf("migrations: %s: user_version: %w", set, err)
	}
	if uv == latest && latest > 0 {
		return nil
	}
	ms, err := set.List()
	if err != nil {
		return err
	}
	latest = 0
	if len(ms) > 0 {
		latest = ms[len(ms)-1].Version
	}
	cur, err := Version(ctx, db)
	if err != nil {
		return err
	}
	if cur > latest {
		return fmt.Errorf("migrations: %s at version %d, this binary knows up to %d: %w", set, cur, latest, ErrTooNew)
	}
	if cur == latest {
		// Best effort: without it the next Apply takes the long way again.
		_ = markVersion(ctx, db, set, latest)
		return nil
	}
	if cur == 0 && useBase {
		if b, ok := set.base(latest); ok {
			if err := applyBase(ctx, db, set, b, ms); err != nil {
				return err
			}
			cur = b.Version
		}
	}
	for _, m := range ms {
		if m.Version <= cur {
			continue
		}
		if err := applyOne(ctx, db, set, m); err != nil {
			return err
		}
	}
	return nil
}

// noForeignKeys is the first line of a migration that rebuilds tables:
// SQLite's way to change a table's definition is to create the new table,
// copy the rows and drop the old one, which foreign keys would refuse
// half-way (dropping a table deletes its rows first). Such a migration
// runs on one connection with foreign keys off, and commits only if
// PRAGMA foreign_key_check then finds no row breaking one.
const noForeignKeys = "-- ckpt: foreign_keys off\n"

func applyOne(ctx context.Context, db *sql.DB, set Set, m Migration) error {
	var q interface {
		BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
	} = db
	fkOff := strings.HasPrefix(m.SQL, noForeignKeys)
	if fkOff {
		conn, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migrations: %s %s: %w", set, m.Name, err)
		}
		defer conn.Close()
		// The pragma is a no-op inside a transaction, so it is set on the
		// connection before one starts, and put back before the connection
		// returns to the pool (or the connection is dropped).
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return fmt.Errorf("migrations: %s %s: %w", set, m.Name, err)
		}
		defer func() {
			if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); err != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
		q = conn
	}
	tx, err := q.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrations: %s %s: begin: %w", set, m.Name, err)
	}
	defer tx.Rollback()

	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("migrations: %s: create table: %w", set, err)
	}
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&done); err != nil {
		return fmt.Errorf("migrations: %s %s: %w", set, m.Name, err)
	}
	if done > 0 {
		return nil // another process applied it between our check and our lock
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migrations: %s %s: %w", set, m.Name, err)
	}
	if fkOff {
		if err := foreignKeyCheck(ctx, tx); err != nil {
			return fmt.Errorf("migrations: %s %s: %w", set, m.Name, err)
		}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, strftime('%s','now'))`,
		m.Version, m.Name); err != nil {
		return fmt.Errorf("migrations: %s %s: record: %w", set, m.Name, err)
	}
	if err := setUserVersion(ctx, tx, m.Version); err != nil {
		return fmt.Errorf("migrations: %s %s: record: %w", set, m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrations: %s %s: commit: %w", set, m.Name, err)
	}
	return nil
}

// foreignKeyCheck fails when a row of the database breaks a foreign key.
func foreignKeyCheck(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return fmt.Errorf("foreign key check: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return fmt.Errorf("foreign key check: %w", err)
		}
		return fmt.Errorf("foreign key check: a row of %s (rowid %v) names a missing row of %s", table, rowid.Int64, parent)
	}
	return rows.Err()
}
