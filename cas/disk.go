package cas

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/ckpt/ckpt/migrations"
)

const (
	// inlineMax is the largest content stored inline in blobs.data; larger
	// content goes to a file under objects/.
	inlineMax = 1 << 20
	// walkPage is how many rows Walk reads per query. Walk holds no read
	// transaction while its callback runs.
	walkPage = 1000
)

// dsnParams are set on every pooled connection. busy_timeout comes first
// so that the others wait out a lock instead of failing: it is given as the
// driver's _busy_timeout key, which the driver applies before every other
// setting (a _pragma would come after _auto_vacuum). journal_mode is
// given as the driver's _journal_mode key, which it applies after the
// _pragma list: page_size must precede it, since a database in WAL mode
// keeps the page size it was created with. _auto_vacuum is applied by the
// driver before everything else, so a new database is created in
// incremental auto-vacuum mode (Compact gives pages back to the file
// system); an older one is converted by its first Compact.
//
// cache_size is 256 KiB, an eighth of SQLite's default: blobs are written
// once and read rarely, and a batch's commit of 8 MiB of small blobs would
// otherwise hold its dirty pages in C memory the Go heap limit does not see
// until the commit (a small cache spills them to the WAL as it goes). A
// first scan of Go's source tree peaked 4-5 MiB lower.
//
// temp_store is MEMORY: a row is added by INSERT ... SELECT (addSQL), which
// SQLite gives a statement journal inside a transaction, and once one
// statement's journal outgrew 64 KiB the connection wrote every later
// statement's journal pages to a deleted temp file until the commit: a
// capture of 2,000 files of Go's source made 6,524 pwrite64 (two per
// file: a page number, then the page) to /var/tmp for it. In memory the
// journal holds only the pages one statement changed that were there
// before it (every statement on blobs.db changes one row), and blobs.db
// has no query that sorts or groups through a temp table. A statement
// journal only undoes a statement inside its transaction: durability
// comes from the WAL and is the same.
const dsnParams = "_busy_timeout=10000&_auto_vacuum=incremental&_pragma=page_size(2048)&_journal_mode=WAL" +
	"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=cache_size(-256)&_pragma=temp_store(MEMORY)&_txlock=immediate"

// Disk is a Store in a directory; doc.go describes the layout. It is safe
// for concurrent use by many goroutines and by many processes sharing the
// directory.
type Disk struct {
	// Clock returns the creation time recorded for new blobs. Set it
	// before the first Put; nil means time.Now.
	Clock func() time.Time

	dir       string
	db        *sql.DB
	hasStmt   lazyStmt // Has and the sweep ask it
	checkStmt lazyStmt // Put asks it once per blob
	openStmt  lazyStmt // Open and Get ask it once per blob
	addStmt   lazyStmt // record inserts every new blob's row with it
	chainStmt lazyStmt // links reads a delta chain with it
	// missingStmt and prefetchStmt look many blobs up at once (Missing,
	// Prefetch).
	missingStmt, prefetchStmt lazyStmt
	codec                     *codec
	// lock is dir/lock. Holding objMu and an flock on lock serializes,
	// across goroutines and processes, the moves of object files into
	// objects/ with the deletes that remove them, so a Delete never
	// removes a file another Put has just recorded.
	lock   *os.File
	gc     holdLock // dir/gc.lock: Hold (shared) against Collect (exclusive)
	objMu  sync.Mutex
	wmu    sync.Mutex // one write transaction at a time in this process
	closed atomic.Bool
}

var _ Store = (*Disk)(nil)

// OpenDisk opens the store in dir, creating it if needed, and removes
// temp files left by writers that died.
func OpenDisk(ctx context.Context, dir string) (*Disk, error) {
	d, err := openDisk(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("cas: open %s: %w", dir, err)
	}
	return d, nil
}

func openDisk(ctx context.Context, dir string) (_ *Disk, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	for _, sub := range []string{dir, filepath.Join(dir, "tmp"), filepath.Join(dir, "objects")} {
		if err := mkdir(sub); err != nil {
			return nil, err
		}
		if err := privateDir(sub); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"lock", "gc.lock"} {
		if err := privateFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	if err := privateDB(filepath.Join(dir, "blobs.db")); err != nil {
		return nil, err
	}
	d := &Disk{dir: dir, gc: holdLock{path: gcLockPath(dir)}}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	if d.lock, err = os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, err
	}
	if err := migrations.Create(ctx, filepath.Join(dir, "blobs.db"), pageSize); err != nil { // see dsn.go
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "blobs.db")), RawQuery: dsnFor(filepath.Join(dir, "blobs.db"))}
	if d.db, err = migrations.Open(ctx, u.String(), migrations.CAS, checkPragmas); err != nil {
		return nil, err
	}
	d.hasStmt = lazyStmt{db: d.db, query: `SELECT EXISTS (SELECT 1 FROM blobs WHERE ` + byID + `)`}
	d.checkStmt = lazyStmt{db: d.db, query: checkSQL}
	d.openStmt = lazyStmt{db: d.db, query: `SELECT size, enc, data IS NULL, data FROM blobs WHERE ` + byID}
	d.addStmt = lazyStmt{db: d.db, query: addSQL}
	d.chainStmt = lazyStmt{db: d.db, query: chainSQL}
	d.missingStmt = lazyStmt{db: d.db, query: idsSQL + `SELECT b.id ` + fromIDs}
	d.prefetchStmt = lazyStmt{db: d.db, query: idsSQL + `SELECT b.id, b.size, b.enc, b.data IS NULL, b.data ` + fromIDs +
		` WHERE b.enc != 2 AND b.data IS NOT NULL AND length(b.data) <= ?2`}
	d.codec = newCodec()
	if err := cleanTemp(filepath.Join(dir, "tmp")); err != nil {
		return nil, err
	}
	return d, nil
}

// checkPragmas fails unless the DSN's pragmas took effect.
func checkPragmas(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var mode string
	var busy, synchronous int
	if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&synchronous); err != nil {
		return err
	}
	if mode != "wal" || busy != 10000 || synchronous != 2 {
		return fmt.Errorf("sqlite settings did not take: journal_mode=%s busy_timeout=%d synchronous=%d, want wal, 10000, 2 (FULL)",
			mode, busy, synchronous)
	}
	return nil
}

// Dir returns the store's directory, as an absolute path.
func (d *Disk) Dir() string { return d.dir }

func (d *Disk) now() time.Time {
	if d.Clock != nil {
		return d.Clock()
	}
	return time.Now()
}

func (d *Disk) objectPath(id ID) string {
	hex := id.String()
	return filepath.Join(d.dir, "objects", hex[:2], hex)
}

// pending is a blob ready to be recorded: hashed and encoded, and for a file
// blob written and synced in tmp/.
type pending struct {
	id     ID
	size   int64
	stored int64
	enc    int
	data   []byte    // inline bytes, never nil; nil for a file blob
	file   *tempFile // the file blob's temp file
	heal   bool      // a broken row of this id is there: replace it
	base   ID        // enc 2: the blob whose plain bytes are the dictionary
	depth  int       // enc 2: base's depth + 1
}

func (p pending) discard() {
	if p.file != nil {
		p.file.discard()
	}
}

// prepare reads r, hashes it and encodes it, all outside any lock. It
// reports stored (and keeps nothing) when the content is already recorded.
func (d *Disk) prepare(ctx context.Context, r io.Reader) (p pending, stored bool, err error) {
	size := sizeOf(r)
	big := size >= bigBlob
	r = ctxReader{ctx, r}
	buf := heads.Get().(*bytes.Buffer)
	defer heads.Put(buf)
	buf.Reset()
	if size > 0 {
		// Room for all of the head and ReadFrom's minimum read, so the
		// buffer is not doubled past it (a pooled 2 MiB buffer per
		// worker for every file over 512 KiB).
		buf.Grow(int(min(size, inlineMax)) + 1 + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, inlineMax+1)); err != nil {
		return pending{}, false, err
	}
	head := buf.Bytes()
	if len(head) > inlineMax {
		return d.prepareFile(ctx, head, r, big)
	}
	p = pending{id: Sum(head), size: int64(len(head))}
	if stored, p.heal, err = d.stored(ctx, p.id, p.size); err != nil || stored {
		return p, stored, err
	}
	var full []byte
	if hint, ok := baseOf(ctx); ok && hint != p.id && !p.heal {
		// Never while healing: the broken row may be a base of the hint's
		// own chain, and a delta against it would make a cycle.
		dp, f, enc, ok := d.delta(ctx, hint, head)
		if ok {
			dp.id = p.id
			return dp, false, nil
		}
		full, p.enc = f, enc
	}
	if full == nil {
		full, p.enc = d.codec.encode(head, rarelyRead(ctx))
	}
	if p.data = full; p.enc == encRaw {
		p.data = append([]byte{}, head...) // head goes back to the pool; an empty blob's data must not be nil either
	}
	p.stored = int64(len(p.data))
	return p, false, nil
}

// sizeOf returns the size of r when r is a file (what captures and scans
// put), else -1.
func sizeOf(r io.Reader) int64 {
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// heads holds the buffers prepare reads the first MiB of content into.
var heads = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// prepareFile streams head and then the rest of r into a temp file, hashing
// and compressing as it goes. Whether to compress is decided from head, the
// first MiB: a stream cannot be re-encoded raw at the end without reading it
// twice.
func (d *Disk) prepareFile(ctx context.Context, head []byte, r io.Reader, big bool) (p pending, stored bool, err error) {
	t, err := createTemp(filepath.Join(d.dir, "tmp"))
	if err != nil {
		return pending{}, false, err
	}
	defer func() {
		if err != nil || stored {
			t.discard()
		}
	}()
	var w io.Writer = t
	var z *zstd.Encoder
	if d.codec.worth(head) {
		p.enc = encZstd
		z = d.codec.encoder(t, big)
		defer d.codec.putEncoder(z, big)
		w = z
	}
	h := blake3.New()
	write := func(b []byte) error {
		h.Write(b)
		p.size += int64(len(b))
		_, err := w.Write(b)
		return err
	}
	if err := write(head); err != nil {
		return pending{}, false, err
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := write(buf[:n]); err != nil {
				return pending{}, false, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return pending{}, false, rerr
		}
	}
	if z != nil {
		if err := z.Close(); err != nil { // writes the frame's last block
			return pending{}, false, err
		}
	}
	p.id = ID(h.Sum(nil))
	if stored, p.heal, err = d.stored(ctx, p.id, p.size); err != nil || stored {
		return p, stored, err
	}
	if p.stored, err = t.sync(); err != nil {
		return pending{}, false, err
	}
	p.file = t
	return p, false, nil
}

// record makes pending blobs durable and visible: file blobs are moved into
// objects/ under the objects lock, then one transaction inserts every row.
// Each temp file is committed or discarded by the time record returns.
func (d *Disk) record(ctx context.Context, ps []pending) error {
	if slices.ContainsFunc(ps, func(p pending) bool { return p.file != nil }) {
		unlock, err := d.lockObjects()
		if err != nil {
			for _, p := range ps {
				p.discard()
			}
			return err
		}
		defer unlock()
		if err := d.moveFiles(ctx, ps); err != nil {
			return err
		}
	}
	created := d.now().UnixNano()
	if len(ps) == 1 && ps[0].enc != encDelta && !ps[0].heal {
		// One new row is one statement, atomic by itself: no BEGIN and
		// COMMIT around it (what a capture of one small file commits).
		p := ps[0]
		d.wmu.Lock()
		defer d.wmu.Unlock()
		add, err := d.addStmt.get(ctx)
		if err != nil {
			return err
		}
		rctx, err := oneRow(ctx)
		if err != nil {
			return err
		}
		_, err = add.ExecContext(rctx, p.id, p.size, p.stored, p.enc, p.depth, nil, created, p.data)
		return err
	}
	// Prepared before the transaction begins: preparing while it holds the
	// pool's connection would open a second one (its pragmas, its own parse
	// of the schema).
	add, err := d.addStmt.get(ctx)
	if err != nil {
		return err
	}
	err = d.update(ctx, func(tx *sql.Tx) error { return insertRows(ctx, tx, add, ps, created) })
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.heal && p.data != nil {
			// A broken row that claimed a file for inline-sized content
			// may have left one; no Put of this id writes a file.
			os.Remove(d.objectPath(p.id))
		}
	}
	return nil
}

// insertRows inserts the rows of ps in tx, add being the prepared addSQL.
// A new row never replaces one another Put recorded meanwhile; a healing
// row is written over the broken one in place, keeping its key, which
// deltas stored against it name.
func insertRows(ctx context.Context, tx *sql.Tx, add *sql.Stmt, ps []pending, created int64) error {
	insert := tx.StmtContext(ctx, add)
	var heal *sql.Stmt
	for _, p := range ps {
		rctx, err := oneRow(ctx)
		if err != nil {
			return err
		}
		var base any // NULL unless a delta
		depth := int64(p.depth)
		if p.enc == encDelta {
			k, d, err := deltaBase(ctx, tx, p)
			if err != nil {
				return err
			}
			base, depth = k, d
		}
		if p.heal {
			if heal == nil {
				if heal, err = tx.PrepareContext(ctx, healSQL); err != nil {
					return err
				}
				defer heal.Close()
			}
			res, err := heal.ExecContext(rctx, p.id, p.size, p.stored, p.enc, depth, base, created, p.data)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n > 0 {
				continue
			}
			// The broken row was deleted meanwhile: insert.
		}
		if _, err := insert.ExecContext(rctx, p.id, p.size, p.stored, p.enc, depth, base, created, p.data); err != nil {
			return err
		}
	}
	return nil
}

// deltaBase returns the key of the delta p's base and the depth p's row
// gets. The base was durable before the delta was encoded; a delete since
// (no Hold was taken) must fail the commit rather than leave a delta
// without its base. A Repack since may have moved the base to another
// depth (its plain bytes, all the delta needs, are the same): the depth is
// taken from the base's row as it is now, and a chain that would outgrow
// maxDepth fails the commit rather than be written unreadable.
func deltaBase(ctx context.Context, tx *sql.Tx, p pending) (k, depth int64, err error) {
	var enc int
	err = tx.QueryRowContext(ctx, `SELECT k, enc, depth FROM blobs WHERE `+byID, p.base).Scan(&k, &enc, &depth)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("blob %s: its delta base %s was deleted meanwhile", p.id.Short(), p.base.Short())
	}
	if err != nil {
		return 0, 0, err
	}
	if enc != encDelta {
		depth = 0
	}
	if depth >= maxDepth {
		return 0, 0, fmt.Errorf("blob %s: its delta base %s was re-encoded meanwhile, %d deep", p.id.Short(), p.base.Short(), depth)
	}
	return k, depth + 1, nil
}

// moveFiles commits each pending temp file to its object path (over a
// broken one), or drops it when the blob is soundly stored already. The caller holds the objects lock, so
// no Delete runs in between. After an error the remaining temp files are
// discarded.
func (d *Disk) moveFiles(ctx context.Context, ps []pending) error {
	var err error
	for i := range ps {
		t := ps[i].file
		if t == nil {
			continue
		}
		ps[i].file = nil
		var stored bool
		if err == nil {
			stored, ps[i].heal, err = d.stored(ctx, ps[i].id, ps[i].size)
		}
		if err != nil || stored {
			t.discard()
			continue
		}
		path := d.objectPath(ps[i].id)
		if err = mkdir(filepath.Dir(path)); err != nil {
			t.discard()
			continue
		}
		err = t.commit(path)
	}
	return err
}

// lockObjects takes the objects lock; see Disk.lock.
func (d *Disk) lockObjects() (unlock func(), err error) {
	d.objMu.Lock()
	if err := lockFile(d.lock); err != nil {
		d.objMu.Unlock()
		return nil, fmt.Errorf("lock objects: %w", err)
	}
	return func() {
		unlockFile(d.lock)
		d.objMu.Unlock()
	}, nil
}

// update runs fn in a write transaction.
func (d *Disk) update(ctx context.Context, fn func(*sql.Tx) error) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// oneRow returns ctx without its cancellation, for one statement on one
// row by its key (microseconds), or ctx's error when it is done already.
// The SQLite driver starts a goroutine per statement to watch a context
// that can be cancelled (and database/sql one more per query's rows): the
// CLI's context can (an interrupt), and a capture of 2,000 files started
// some 4,000 of them for the blob store's check and insert of each row.
// A cancellation is still seen between rows.
func oneRow(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// byID selects the row of the blob whose id is parameter ?1. blobs.db
// indexes ids by their first 8 bytes (migrations/cas/0003_blob_keys.sql:
// a quarter of a full id's index entry), so the condition names that
// prefix, as the index's expression, and then the whole id. Two ids that
// share a prefix cost one more row read, nothing else.
const byID = `substr(id, 1, 8) = substr(?1, 1, 8) AND id = ?1`

// addSQL records a new blob's row, unless a row of its id is there: the
// prefix index is not unique, so the check is in the statement, and it is
// race-free because writers hold SQLite's write lock (BEGIN IMMEDIATE).
const addSQL = `INSERT INTO blobs (id, size, stored, enc, depth, base, created, data) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
	WHERE NOT EXISTS (SELECT 1 FROM blobs WHERE ` + byID + `)`

// healSQL writes a blob's row over a broken one, keeping its key.
const healSQL = `UPDATE blobs SET size = ?2, stored = ?3, enc = ?4, depth = ?5, base = ?6, created = ?7, data = ?8 WHERE ` + byID

// checkSQL reads what Put's dedup check needs of a row: its metadata, the
// length of its inline data, and for a delta whether its base row is there.
const checkSQL = `SELECT size, stored, enc, data IS NULL, coalesce(length(data), -1),
	CASE WHEN enc = 2 THEN EXISTS (SELECT 1 FROM blobs b WHERE b.k = blobs.base) ELSE 1 END FROM blobs WHERE ` + byID

// stored reports whether the blob id, whose content is size bytes, is
// soundly stored: its row is there, consistent with the content, and a
// file blob's file exists at its recorded size. broken is set when a row
// is there but cannot hold the content (a wrong size or encoding, inline
// data of the wrong length, a missing or truncated object file): Put then
// writes the blob again over it. The check costs one indexed query and,
// for a file blob, one stat; it does not read content, so damage inside
// bytes of the right length is left to readers (ErrCorrupt) and to verify
// --repair, which drops such a row so that the next Put stores it afresh.
func (d *Disk) stored(ctx context.Context, id ID, size int64) (stored, broken bool, err error) {
	var rsize, rstored, enc, dataLen int64
	var inFile, baseOK bool
	check, err := d.checkStmt.get(ctx)
	if err != nil {
		return false, false, err
	}
	rctx, err := oneRow(ctx)
	if err != nil {
		return false, false, err
	}
	err = check.QueryRowContext(rctx, id).Scan(&rsize, &rstored, &enc, &inFile, &dataLen, &baseOK)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	sound := rsize == size && (enc == encRaw || enc == encZstd || enc == encDelta && baseOK && !inFile) &&
		(enc != encRaw || rstored == size)
	switch {
	case !sound:
	case inFile:
		fi, err := os.Stat(d.objectPath(id))
		sound = size > inlineMax && err == nil && fi.Mode().IsRegular() && fi.Size() == rstored
	default:
		sound = size <= inlineMax && dataLen == rstored
	}
	return sound, !sound, nil
}

func (d *Disk) has(ctx context.Context, id ID) (bool, error) {
	has, err := d.hasStmt.get(ctx)
	if err != nil {
		return false, err
	}
	var ok bool
	err = has.QueryRowContext(ctx, id).Scan(&ok)
	return ok, err
}

// Put implements Store.
func (d *Disk) Put(ctx context.Context, r io.Reader) (ID, int64, error) {
	if d.closed.Load() {
		return ID{}, 0, fmt.Errorf("cas: put: %w", ErrClosed)
	}
	p, stored, err := d.prepare(ctx, r)
	if err != nil {
		return ID{}, 0, fmt.Errorf("cas: put: %w", err)
	}
	if !stored {
		if err := d.record(ctx, []pending{p}); err != nil {
			return ID{}, 0, fmt.Errorf("cas: put %s: %w", p.id.Short(), err)
		}
	}
	return p.id, p.size, nil
}

// open looks the blob up and returns its verifying reader; op names the
// calling operation in errors.
func (d *Disk) open(ctx context.Context, op string, id ID) (*verifier, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("cas: %s %s: %w", op, id.Short(), ErrClosed)
	}
	var r blobRow
	st, err := d.openStmt.get(ctx)
	if err == nil {
		err = st.QueryRowContext(ctx, id).Scan(&r.size, &r.enc, &r.inFile, &r.data)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("cas: %s %s: %w", op, id.Short(), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cas: %s %s: %w", op, id.Short(), err)
	}
	return d.openRow(ctx, op, id, r)
}

// blobRow is what open reads of a blob's row.
type blobRow struct {
	size, enc int64
	inFile    bool
	data      []byte
}

// openRow returns the verifying reader of the blob id whose row is r.
func (d *Disk) openRow(ctx context.Context, op string, id ID, r blobRow) (*verifier, error) {
	size, enc, inFile, data := r.size, r.enc, r.inFile, r.data
	switch {
	case size < 0 || !inFile && size > inlineMax:
		return newVerifier(id, 0, nil, nil, fmt.Errorf("impossible recorded size %d", size)), nil
	case enc == encDelta:
		b, err := d.plain(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("cas: %s %s: %w", op, id.Short(), err) // deleted since the row was read
		}
		if ce := (*chainError)(nil); errors.As(err, &ce) {
			return newVerifier(id, size, nil, nil, err), nil
		}
		if err != nil {
			return nil, fmt.Errorf("cas: %s %s: %w", op, id.Short(), err)
		}
		return newVerifier(id, size, bytes.NewReader(b), nil, nil), nil
	case enc != encRaw && enc != encZstd:
		return newVerifier(id, size, nil, nil, fmt.Errorf("unknown encoding %d", enc)), nil
	case inFile:
		v, err := d.openFile(id, size, enc)
		if err != nil {
			return nil, fmt.Errorf("cas: %s %s: %w", op, id.Short(), err)
		}
		return v, nil
	case enc == encZstd:
		b, err := d.codec.decode(data, size)
		return newVerifier(id, size, bytes.NewReader(b), nil, err), nil
	default:
		return newVerifier(id, size, bytes.NewReader(data), nil, nil), nil
	}
}

func (d *Disk) openFile(id ID, size, enc int64) (*verifier, error) {
	f, err := os.Open(d.objectPath(id))
	if os.IsNotExist(err) {
		return newVerifier(id, size, nil, nil, fmt.Errorf("object file missing: %w", err)), nil
	}
	if err != nil {
		return nil, err
	}
	if enc == encRaw {
		return newVerifier(id, size, f, func() { f.Close() }, nil), nil
	}
	z, err := d.codec.decoder(f)
	if err != nil {
		f.Close()
		return newVerifier(id, size, nil, nil, err), nil
	}
	return newVerifier(id, size, z, func() {
		d.codec.putDecoder(z)
		f.Close()
	}, nil), nil
}

// Open implements Store.
func (d *Disk) Open(ctx context.Context, id ID) (io.ReadCloser, error) {
	v, err := d.open(ctx, "open", id)
	if err != nil {
		return nil, err // not a nil *verifier in a non-nil interface
	}
	return v, nil
}

// Get implements Store.
func (d *Disk) Get(ctx context.Context, id ID) ([]byte, error) {
	v, err := d.open(ctx, "get", id)
	if err != nil {
		return nil, err
	}
	return v.readAll()
}

// Has implements Store.
func (d *Disk) Has(ctx context.Context, id ID) (bool, error) {
	if d.closed.Load() {
		return false, fmt.Errorf("cas: has %s: %w", id.Short(), ErrClosed)
	}
	ok, err := d.has(ctx, id)
	if err != nil {
		return false, fmt.Errorf("cas: has %s: %w", id.Short(), err)
	}
	return ok, nil
}

// Missing returns those of ids that are not stored, each once, in the
// order given: what many calls of Has would say, asked with one prepared
// query (a rewind checks every target's blob before it plans).
func (d *Disk) Missing(ctx context.Context, ids []ID) ([]ID, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("cas: missing: %w", ErrClosed)
	}
	want := make(map[ID]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	err := eachRow(ctx, &d.missingStmt, ids, nil, func(rows *sql.Rows) error {
		var id ID
		if err := rows.Scan(&id); err != nil {
			return err
		}
		delete(want, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cas: missing: %w", err)
	}
	var out []ID
	for _, id := range ids {
		if want[id] {
			out = append(out, id)
			delete(want, id)
		}
	}
	return out, nil
}

// A Prefetch holds the rows of blobs about to be read, looked up together:
// opening one of them through it costs no query of its own. It holds only
// blobs stored whole in the index with at most prefetchMax bytes (not
// deltas, not files); Open reads any other as Disk.Open does. Content is
// verified as Disk.Open's is.
type Prefetch struct {
	d    *Disk
	rows map[ID]blobRow
}

// prefetchMax is the most stored bytes of one blob a Prefetch holds: a
// rewind of 1,000 source files holds a few MiB of them at once.
const prefetchMax = 64 << 10

// Prefetch reads the rows of ids with one prepared query. The caller
// bounds how many it asks for at once (each row held is up to
// prefetchMax bytes).
func (d *Disk) Prefetch(ctx context.Context, ids []ID) (*Prefetch, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("cas: prefetch: %w", ErrClosed)
	}
	p := &Prefetch{d: d, rows: make(map[ID]blobRow, len(ids))}
	err := eachRow(ctx, &d.prefetchStmt, ids, []any{prefetchMax}, func(rows *sql.Rows) error {
		var id ID
		var r blobRow
		if err := rows.Scan(&id, &r.size, &r.enc, &r.inFile, &r.data); err != nil {
			return err
		}
		p.rows[id] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cas: prefetch: %w", err)
	}
	return p, nil
}

// Open is Disk.Open of a blob, from its prefetched row when it has one.
func (p *Prefetch) Open(ctx context.Context, id ID) (io.ReadCloser, error) {
	r, ok := p.rows[id]
	if !ok {
		return p.d.Open(ctx, id)
	}
	if p.d.closed.Load() {
		return nil, fmt.Errorf("cas: open %s: %w", id.Short(), ErrClosed)
	}
	v, err := p.d.openRow(ctx, "open", id, r)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// idsSQL and fromIDs make a query of the rows of many ids, bound as one
// blob of their bytes (?1): idsSQL numbers the ids' offsets in it, and
// fromIDs finds each one's row through the id prefix index, as byID does
// for one id. One statement, prepared once, serves any number of ids.
const (
	idsSQL  = `WITH RECURSIVE want(at) AS (SELECT 1 UNION ALL SELECT at + 32 FROM want WHERE at + 32 <= length(?1)) `
	fromIDs = `FROM want CROSS JOIN blobs b ON substr(b.id, 1, 8) = substr(?1, at, 8) AND b.id = substr(?1, at, 32)`
)

// eachRow runs st, a query of idsSQL and fromIDs, for ids (more arguments
// from ?2 on) and calls fn for each row.
func eachRow(ctx context.Context, st *lazyStmt, ids []ID, more []any, fn func(*sql.Rows) error) error {
	if len(ids) == 0 {
		return nil
	}
	q, err := st.get(ctx)
	if err != nil {
		return err
	}
	all := make([]byte, 0, len(ids)*len(ID{}))
	for _, id := range ids {
		all = append(all, id[:]...)
	}
	rows, err := q.QueryContext(ctx, append([]any{all}, more...)...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := fn(rows); err != nil {
			rows.Close()
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// Stat implements Store. Stored counts the bytes of the compressed or raw
// content, not SQLite's page overhead.
func (d *Disk) Stat(ctx context.Context, id ID) (Info, error) {
	if d.closed.Load() {
		return Info{}, fmt.Errorf("cas: stat %s: %w", id.Short(), ErrClosed)
	}
	info := Info{ID: id}
	var created int64
	err := d.db.QueryRowContext(ctx, `SELECT size, stored, created FROM blobs WHERE `+byID, id).
		Scan(&info.Size, &info.Stored, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, fmt.Errorf("cas: stat %s: %w", id.Short(), ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("cas: stat %s: %w", id.Short(), err)
	}
	info.Created = time.Unix(0, created)
	return info, nil
}

// Walk implements Store. It reads the index a page at a time, in key
// order, so fn runs outside any transaction; blobs added or deleted during
// the walk may or may not be seen.
func (d *Disk) Walk(ctx context.Context, fn func(Info) error) error {
	if d.closed.Load() {
		return fmt.Errorf("cas: walk: %w", ErrClosed)
	}
	var after int64
	for {
		infos, last, err := d.walkPage(ctx, after)
		if err != nil {
			return fmt.Errorf("cas: walk: %w", err)
		}
		for _, info := range infos {
			if err := fn(info); err != nil {
				return err
			}
		}
		if len(infos) < walkPage {
			return nil
		}
		after = last
	}
}

// walkPage returns the blobs with keys after after, at most walkPage of
// them, and the last key returned.
func (d *Disk) walkPage(ctx context.Context, after int64) ([]Info, int64, error) {
	rows, err := d.db.QueryContext(ctx,
		`SELECT k, id, size, stored, created, CASE WHEN enc = 2 THEN (SELECT b.id FROM blobs b WHERE b.k = blobs.base) END
		FROM blobs WHERE k > ? ORDER BY k LIMIT ?`, after, walkPage)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var infos []Info
	var last int64
	for rows.Next() {
		var info Info
		var id, base []byte
		var created int64
		if err := rows.Scan(&last, &id, &info.Size, &info.Stored, &created, &base); err != nil {
			return nil, 0, err
		}
		copy(info.ID[:], id)
		copy(info.Base[:], base)
		info.Created = time.Unix(0, created)
		infos = append(infos, info)
	}
	return infos, last, rows.Err()
}

// Close implements Store.
func (d *Disk) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	if err := d.release(); err != nil {
		return fmt.Errorf("cas: close %s: %w", d.dir, err)
	}
	return nil
}

// walKeep is the largest blobs.db-wal that CloseForExit leaves for the
// next process. The next opener reads all of it to rebuild the WAL index,
// which for 128 KiB costs well under the two fsyncs a checkpoint would.
// It was 64 KiB with 512-byte pages; a capture of a small file adds about
// 1.4 times the WAL bytes with 2048-byte pages (fewer, larger frames), and
// 128 KiB keeps a checkpoint to about one capture in ten or more.
const walKeep = 128 << 10

// CloseForExit is Close for a process that exits as soon as it returns
// (one ckpt command). Closing SQLite's last connection checkpoints the WAL
// into blobs.db and deletes it: an fsync of the WAL and one of blobs.db,
// after which the next process's first commit creates the WAL again and
// fsyncs its header and the directory. While the WAL is at most walKeep
// bytes, CloseForExit releases everything but the database connection,
// which the process's exit closes without a checkpoint: the WAL stays, and
// SQLite's next opener recovers it as it would after a crash. Nothing
// committed is at risk: with synchronous=FULL every commit fsynced the
// WAL before it returned. A larger WAL is checkpointed as Close does, so
// it never grows past walKeep plus one command's writes. Make it the
// process's last close of the store: a Disk opened on the directory later
// in the same process works, but its Close cannot checkpoint while the
// left connection holds the database open.
func (d *Disk) CloseForExit() error {
	if d.closed.Swap(true) {
		return nil
	}
	fi, err := os.Stat(filepath.Join(d.dir, "blobs.db-wal"))
	keep := err == nil && fi.Size() <= walKeep
	if err := d.releaseAll(!keep); err != nil {
		return fmt.Errorf("cas: close %s: %w", d.dir, err)
	}
	return nil
}

func (d *Disk) release() error { return d.releaseAll(true) }

// releaseAll releases the Disk's files and memory, and its database
// connections when closeDB is set.
func (d *Disk) releaseAll(closeDB bool) error {
	var err error
	for _, st := range []*lazyStmt{&d.hasStmt, &d.checkStmt, &d.openStmt, &d.addStmt, &d.chainStmt, &d.missingStmt, &d.prefetchStmt} {
		st.close()
	}
	if d.db != nil && closeDB {
		err = d.db.Close()
	}
	if d.codec != nil {
		d.codec.close()
	}
	d.gc.close()
	if d.lock != nil {
		d.lock.Close()
	}
	return err
}
