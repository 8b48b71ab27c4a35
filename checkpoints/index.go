package checkpoints

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/migrations"
)

// FileName is the index's file name inside the session directory.
const FileName = "index.db"

// busyTimeout is how long a writer waits for another process's write
// transaction before giving up. Agent hooks run in parallel, so it is long.
const busyTimeout = 30 * time.Second

// Index is one session's index. It is safe for concurrent use.
type Index struct {
	db  *sql.DB
	dir string
	now func() time.Time
	// stmts are the capture hot path's statements, prepared on first
	// use (prepare), not at Open: most commands never capture.
	stmts struct{ capturing, addPath, addSnap, addStepSnap, tickN *sql.Stmt }
	// stepStmts are BeginStep's, prepared on its first use
	// (prepareStep): a resident hook server opens a step per tool call.
	stepStmts struct{ at, next, tick, insert, seen *sql.Stmt }
	// capturingOpen is capturingOpenSQL, prepared on its first use: a
	// hook's tool call opens its step with its captures.
	capturingOpen *sql.Stmt
	// metaStmt is Meta's, prepared on its first use: a hook server reads
	// a setting or two per tool call.
	metaStmt *sql.Stmt
	prepMu   sync.Mutex
	keep     int64 // changes the change log keeps (WithChangeLogKeep)
}

// Option configures Open.
type Option func(*Index)

// WithClock sets the clock used for turn, message and op times (tests).
func WithClock(now func() time.Time) Option { return func(x *Index) { x.now = now } }

// PageSize is the page size of a new index. Every table and index of the
// schema takes at least one page, 28 in all, and the schema's text about
// 16 more, so an index of one turn and one capture is 45 pages: 180 KiB at
// SQLite's default 4 KiB, 22.5 KiB at 512 bytes. Every Claude Code session is a ckpt session, so a user
// collects thousands of small ones; the cost is more overflow pages for
// long prompts and messages (see bench/README.md for list and capture
// timings at this size). An existing index keeps the size it has.
const PageSize = 512

// DSN returns the connection string for the SQLite file at path: WAL,
// busy_timeout, synchronous NORMAL, foreign keys and immediate write
// transactions, set per connection so every pooled connection has them.
// A new index is created in incremental auto-vacuum mode, so Compact can
// give the pages of pruned rows back to the file system; for an existing
// one the setting is left out, since re-applying it is a write (see
// migrations.Created).
func DSN(path string) string {
	q := url.Values{}
	// The driver applies _busy_timeout before every other key (a _pragma
	// would come after _auto_vacuum, which must wait out locks too).
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	if !migrations.Created(path) {
		q.Set("_auto_vacuum", "incremental")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Open opens (creating if needed) the index in dir and brings its schema up
// to date. It fails with an error wrapping migrations.ErrTooNew when the
// index was written by a newer ckpt.
func Open(ctx context.Context, dir string, opts ...Option) (*Index, error) {
	if err := createSession(ctx, dir); err != nil {
		return nil, fmt.Errorf("checkpoints: open %s: %w", dir, err)
	}
	if err := privateIndex(dir); err != nil {
		return nil, fmt.Errorf("checkpoints: open %s: %w", dir, err)
	}
	// Open creates a new index in incremental auto-vacuum mode itself, but
	// cannot set its page size (see migrations.Create).
	if err := migrations.Create(ctx, filepath.Join(dir, FileName), PageSize); err != nil {
		return nil, fmt.Errorf("checkpoints: open %s: %w", dir, err)
	}
	db, err := migrations.Open(ctx, DSN(filepath.Join(dir, FileName)), migrations.Index, checkPragmas)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: open %s: %w", dir, err)
	}
	x := &Index{db: db, dir: dir, now: time.Now, keep: DefaultChangeLogKeep}
	for _, o := range opts {
		o(x)
	}
	return x, nil
}

// prepare prepares the capture hot path's statements unless it has. Call
// it before beginning the transaction that uses them: preparing while a
// transaction holds the pool's connection would open a second connection
// (its pragmas, its own parse of the schema). A failure is returned and
// the next call tries again.
func (x *Index) prepare(ctx context.Context) error {
	return x.prepareAll(ctx, []prepared{{&x.stmts.capturing, capturingSQL}, {&x.stmts.addPath, addPathSQL},
		{&x.stmts.addSnap, addSnapSQL}, {&x.stmts.addStepSnap, addStepSnapSQL}, {&x.stmts.tickN, tickNSQL}})
}

// prepareStep is prepare for BeginStep's statements.
func (x *Index) prepareStep(ctx context.Context) error {
	return x.prepareAll(ctx, []prepared{{&x.stepStmts.at, stepAtSQL}, {&x.stepStmts.next, stepNextSQL}, {&x.stepStmts.tick, stepTickSQL},
		{&x.stepStmts.insert, insertStepSQL}, {&x.stepStmts.seen, insertSeenStepSQL}})
}

// prepared is a statement to prepare (prepareAll) and where it goes.
type prepared struct {
	dst   **sql.Stmt
	query string
}

// prepareAll prepares the statements of one group, all or none, unless
// it has.
func (x *Index) prepareAll(ctx context.Context, group []prepared) error {
	x.prepMu.Lock()
	defer x.prepMu.Unlock()
	if *group[0].dst != nil {
		return nil
	}
	stmts := make([]*sql.Stmt, len(group))
	for i, p := range group {
		var err error
		if stmts[i], err = x.db.PrepareContext(ctx, p.query); err != nil {
			for _, st := range stmts[:i] {
				st.Close()
			}
			return fmt.Errorf("checkpoints: prepare: %w", err)
		}
	}
	for i, p := range group {
		*p.dst = stmts[i]
	}
	return nil
}

// createSession makes a new session directory appear whole: the index is
// created, with its schema, in a hidden staging directory beside dir,
// which is then renamed to dir. Retention lists session directories and
// stops at one without a readable index (a deleted or half-copied index
// must never read as "references nothing"); with this, a session being
// created is never such a directory. When dir exists already (an older
// session, or another process won the race), nothing is staged.
func createSession(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".new-"+filepath.Base(dir)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after a successful rename
	if err := privateIndex(tmp); err != nil {
		return err
	}
	if err := migrations.Create(ctx, filepath.Join(tmp, FileName), PageSize); err != nil {
		return err
	}
	db, err := migrations.Open(ctx, DSN(filepath.Join(tmp, FileName)), migrations.Index, checkPragmas)
	if err != nil {
		return err
	}
	// Creating the schema statement by statement leaves sqlite_master's
	// pages part empty; rewriting the (empty) database packs them, a few
	// pages less for every session a user collects.
	if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
		db.Close()
		return err
	}
	// Closing the last connection checkpoints the WAL into index.db.
	if err := db.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, FileName)); serr == nil {
			return nil // another process created it first
		}
		return err
	}
	return syncParent(parent)
}

// syncParent makes a rename in dir durable.
func syncParent(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && runtime.GOOS != "windows" {
		return err
	}
	return nil
}

// checkPragmas verifies that the pragmas of the DSN took effect.
func checkPragmas(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	var ms int64
	if err := db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&ms); err != nil {
		return err
	}
	if ms != busyTimeout.Milliseconds() {
		return fmt.Errorf("busy_timeout is %d ms, want %d", ms, busyTimeout.Milliseconds())
	}
	return nil
}

// Dir returns the session directory.
func (x *Index) Dir() string { return x.dir }

// Close closes the database.
func (x *Index) Close() error { return x.db.Close() }

// write runs fn in one write transaction.
func (x *Index) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return inTx(ctx, x.db, nil, fn)
}

// writeDurable is write with synchronous=FULL for this one transaction:
// its commit is fsynced, where the DSN's NORMAL would leave it to the next
// checkpoint. Rewind and undo records use it, so a power cut can never keep
// files a rewind moved while losing the record that undoes them.
func (x *Index) writeDurable(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = NORMAL`)
	return inTx(ctx, conn, nil, fn)
}

// spillCacheSize is the page cache (PRAGMA cache_size, KiB when negative)
// of writeSpilling's transaction: an eighth of SQLite's default 2 MiB.
const spillCacheSize = -256

// writeSpilling is write with a page cache of spillCacheSize for this one
// transaction, for a write of many pages: the stat cache and the manifest a
// scan saves (~3 MiB of each on Go's source tree). The page cache lives in
// C memory, which the Go heap's limit does not see, and with SQLite's
// default its dirty pages stayed there until the commit, ~3 MiB on top of
// a first scan's peak RSS; a small cache spills them to the WAL as it
// goes. Other writes keep the default: a capture of 2,000 paths made 4%
// more page writes with the small cache.
func (x *Index) writeSpilling(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var was int64
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&was); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA cache_size = `+strconv.Itoa(spillCacheSize)); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA cache_size = `+strconv.FormatInt(was, 10))
	return inTx(ctx, conn, nil, fn)
}

// readMapped is read with the index file memory-mapped for this one
// transaction (PRAGMA mmap_size), for a read that touches many pages: the
// stat cache of a large tree spans thousands of 512-byte pages, mostly
// overflow pages, which SQLite otherwise reads one pread each, bypassing
// its page cache. Mapped, a page is a memory copy.
//
// The cost: a read error on a mapped page (a failing disk, or the file
// truncated by something other than SQLite) is a SIGBUS that ends the
// process, where pread would return an error. Either way the command
// fails before it has written anything (the callers read before they
// write); the next command meets the same fault as an error. SQLite itself
// never truncates the file under an open read transaction (a WAL
// checkpoint does not pass a reader's snapshot), and writes never go
// through the map. The map is dropped when the transaction ends; a
// connection that cannot drop it is closed instead of going back to the
// pool.
func (x *Index) readMapped(ctx context.Context, fn func(tx *sql.Tx) error) error {
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA mmap_size = `+strconv.Itoa(mmapSize)); err != nil {
		return err
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA mmap_size = 0`); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return inTx(ctx, conn, &sql.TxOptions{ReadOnly: true}, fn)
}

// mmapSize is the most of the index readMapped maps: SQLite maps the file
// up to this size and reads the rest. Address space only; pages are
// mapped as they are touched.
const mmapSize = 256 << 20

// read runs fn in one read transaction (a consistent snapshot under WAL).
func (x *Index) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return inTx(ctx, x.db, &sql.TxOptions{ReadOnly: true}, fn)
}

// inTx runs fn in a transaction of db (a pool or one connection): begin,
// roll back on any error, commit.
func inTx(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// clockKey is the meta key holding the clock: every event's seq is a value
// of it. SetMeta and InitMeta refuse it, so no caller's key can set it back.
const clockKey = "clock"

// errReservedKey is returned for a meta key the index keeps for itself.
var errReservedKey = errors.New("key is reserved")

// tick advances the clock and returns the new value.
func tick(ctx context.Context, tx *sql.Tx) (int64, error) {
	var n int64
	err := tx.QueryRowContext(ctx, `UPDATE meta SET value = value + 1 WHERE key = 'clock' RETURNING value`).Scan(&n)
	return n, err
}

// notFound turns sql.ErrNoRows into ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// Meta returns the value stored under key, or ErrNotFound.
func (x *Index) Meta(ctx context.Context, key string) (string, error) {
	if err := x.prepareAll(ctx, []prepared{{&x.metaStmt, metaSQL}}); err != nil {
		return "", err
	}
	var v string
	err := x.metaStmt.QueryRowContext(ctx, key).Scan(&v)
	if err != nil {
		return "", fmt.Errorf("checkpoints: meta %s: %w", key, notFound(err))
	}
	return v, nil
}

const metaSQL = `SELECT value FROM meta WHERE key = ?`

// InitMeta stores value under key unless a value is there already, and
// returns the value in force. A value already there costs one read, not a
// write transaction (every controller Open asks, and parallel hooks would
// queue for the write lock).
func (x *Index) InitMeta(ctx context.Context, key, value string) (string, error) {
	if key == clockKey {
		return "", fmt.Errorf("checkpoints: meta %s: %w", key, errReservedKey)
	}
	var v string
	err := x.db.QueryRowContext(ctx, metaSQL, key).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("checkpoints: meta %s: %w", key, err)
	}
	err = x.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)`, key, value); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	})
	if err != nil {
		return "", fmt.Errorf("checkpoints: meta %s: %w", key, err)
	}
	return v, nil
}

// SetMeta stores value under key, replacing any value there. The key
// "clock" is the index's own and refused.
func (x *Index) SetMeta(ctx context.Context, key, value string) error {
	if key == clockKey {
		return fmt.Errorf("checkpoints: meta %s: %w", key, errReservedKey)
	}
	if _, err := x.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, key, value); err != nil {
		return fmt.Errorf("checkpoints: meta %s: %w", key, err)
	}
	return nil
}

// DeleteMeta removes key's value, if it has one.
func (x *Index) DeleteMeta(ctx context.Context, key string) error {
	if key == clockKey {
		return fmt.Errorf("checkpoints: meta %s: %w", key, errReservedKey)
	}
	if _, err := x.db.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, key); err != nil {
		return fmt.Errorf("checkpoints: meta %s: %w", key, err)
	}
	return nil
}

// blobArg converts an optional id to a SQL argument (NULL for nil).
func blobArg(id *cas.ID) any {
	if id == nil {
		return nil
	}
	return id[:]
}

// scanBlob converts a nullable BLOB column to an optional id.
func scanBlob(b []byte) (*cas.ID, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) != len(cas.ID{}) {
		return nil, fmt.Errorf("blob id has %d bytes, want %d", len(b), len(cas.ID{}))
	}
	var id cas.ID
	copy(id[:], b)
	return &id, nil
}
