package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/migrations"
)

// The catalog (STORE/catalog.db) keeps a summary of every session of the
// store — its workspace, origin, turns with the blobs they reference,
// last use and every blob its index references — so that listing
// sessions, planning retention and marking live blobs read one database
// instead of opening every index.
//
// A summary is a cache, never a source of truth, and it is used only where
// it is provably what the index holds. With each summary the catalog keeps
// the signature of the index's files (index.db and index.db-wal: device,
// inode, size, change and modification times, lstat'ed just before the
// index was read) and the time taken just before that lstat. Every change
// to an index's content is a write(2) to one of those files (a commit
// appends to the WAL; a checkpoint writes index.db; a replaced index is a
// new inode), and a write sets the file's ctime to the current time. A
// summary is trusted when:
//
//   - the files' signature is the one recorded, and they are regular
//     files (a symlinked index.db keeps its own times when its target is
//     written, and SQLite keeps the WAL beside the target);
//   - the WAL is absent or empty: every commit is in index.db, so no
//     writer can have appended a commit whose wal-index update a reader
//     had not seen yet (a process stopped between the two); and
//   - every time in the signature is older than the recorded time by more
//     than catalogMargin: a write after the read sets a time at least
//     that recent, so it cannot leave the signature unchanged, however
//     coarse the file system's clock (racy-git's rule).
//
// Anything else — no row, another signature, a WAL with frames, a recent
// write — is read from the index again and the row rewritten. No writer
// has to tell the catalog anything: writers of any version, a copied or
// pulled index, a crash at any point, all show in the signature. A catalog
// that cannot be read is deleted and rebuilt; losing it loses nothing.
const catalogFile = "catalog.db"

// catalogMargin is how much older than the read a file time must be for a
// summary to be trusted; it covers the file system's timestamp
// granularity (a jiffy on Linux, 2 s on FAT) and clock skew with a
// network file server.
const catalogMargin = 3 * time.Second

// stagingAge is how old a hidden staging directory (sessions/.new-ID-*,
// see createSession) must be before it is taken for a crashed creation's
// leftover and deleted.
const stagingAge = time.Hour

// Origin is where a forked session came from: the session and the turn it
// was forked before. The zero value means the session is not a fork.
type Origin struct {
	Session string
	Turn    int
}

// Meta keys of a fork's origin (see RecordOrigin).
const (
	metaOriginSession = "origin_session"
	metaOriginTurn    = "origin_turn"
)

// RecordOrigin records in the index that it is a fork of session before
// turn (its parent in the session tree). A fork continues none of the
// agent sessions its parent does (see Continuation): the rows it copied
// saying so go.
func (x *Index) RecordOrigin(ctx context.Context, o Origin) error {
	err := x.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key > ? AND key < ?`, metaContinuedBy, continuedByEnd); err != nil {
			return err
		}
		for _, kv := range [][2]string{{metaOriginSession, o.Session}, {metaOriginTurn, strconv.Itoa(o.Turn)}} {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("checkpoints: record origin: %w", err)
	}
	return nil
}

// Origin returns the fork origin the index records, or the zero Origin.
func (x *Index) Origin(ctx context.Context) (Origin, error) {
	s, err := x.Meta(ctx, metaOriginSession)
	if errors.Is(err, ErrNotFound) {
		return Origin{}, nil
	}
	if err != nil {
		return Origin{}, err
	}
	t, err := x.Meta(ctx, metaOriginTurn)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Origin{}, err
	}
	n, _ := strconv.Atoi(t)
	return Origin{Session: s, Turn: n}, nil
}

// Summary is what the catalog knows of one session.
type Summary struct {
	ID        string
	Workspace string
	Origin    Origin
	LastUse   time.Time    // zero for a session that never did anything
	Turns     []TurnRecord // every turn, hidden ones included, in the order opened
	Undo      []cas.ID     // blobs of the undo records
	Refs      []cas.ID     // every blob the index references, each once
	// Err is why the session's index could not be read; the other fields
	// but ID are then zero.
	Err error
}

// Active counts the turns in the active history.
func (s Summary) Active() int {
	n := 0
	for _, t := range s.Turns {
		if !t.Hidden {
			n++
		}
	}
	return n
}

// Catalog is the store's catalog of session summaries. It is safe for
// concurrent use, and several processes may use one store's catalog.
type Catalog struct {
	store string
	db    *sql.DB // nil when the catalog could not be opened: every summary is read
	now   func() time.Time
	// Stats, for tests and benchmarks: summaries taken from the catalog
	// and read from their index by the last Sessions call.
	Cached, Read int
}

// OpenCatalog opens store's catalog, creating it when missing. A catalog
// that cannot be opened (corrupt, written by a newer ckpt) is moved aside
// and rebuilt; if even that fails, the Catalog works without one, reading
// every index.
func OpenCatalog(ctx context.Context, store string) (*Catalog, error) {
	c := &Catalog{store: store, now: time.Now}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoints: catalog: %w", err)
	}
	path := filepath.Join(store, catalogFile)
	db, err := openCatalogDB(ctx, path)
	if err != nil && ctx.Err() == nil && !migrations.IsBusy(err) {
		// A cache: start afresh rather than fail every store command.
		discardCatalog(path)
		db, err = openCatalogDB(ctx, path)
	}
	if err == nil {
		c.db = db
	}
	return c, nil
}

// discardCatalog deletes the catalog file at path and its SQLite side
// files: a cache that cannot be used, rebuilt by the next OpenCatalog.
func discardCatalog(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

func openCatalogDB(ctx context.Context, path string) (*sql.DB, error) {
	if !migrations.Created(path) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	return migrations.Open(ctx, dsn, migrations.Catalog, checkPragmas)
}

// Close closes the catalog.
func (c *Catalog) Close() error {
	if c.db == nil {
		return nil
	}
	return c.db.Close()
}

// OpenFunc opens a session's index for reading, never creating one.
type OpenFunc func(ctx context.Context, id string) (*Index, error)

// row is one catalog row.
type row struct {
	sig  []byte
	at   int64
	data []byte
}

// Sessions returns a summary of every session of the store (each
// registered session, and each directory named by a valid session id),
// sorted by id: from the catalog where it is trusted, else read from the
// index with open and written back. A session whose index cannot be
// opened or read (a registered session whose directory is gone among
// them) is returned with Err set, and does not stop the others; the
// caller decides what that means (collection stops, a listing shows it).
// Rows of sessions that are gone are dropped, and staging directories a
// crashed creation left (sessions/.new-ID-*, older than an hour) are
// deleted. It fails only when the sessions directory or the registry
// cannot be listed or ctx ends.
func (c *Catalog) Sessions(ctx context.Context, open OpenFunc) ([]Summary, error) {
	c.Cached, c.Read = 0, 0
	dir := filepath.Join(c.store, "sessions")
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoints: sessions: %w", err)
	}
	// Every registered session, and every session directory: a
	// registered one whose directory is gone is read as missing.
	ids, err := Registered(c.store)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		switch {
		case IsSessionEntry(dir, e):
			ids = append(ids, e.Name())
		case e.IsDir() && strings.HasPrefix(e.Name(), ".new-"):
			cleanStaging(filepath.Join(dir, e.Name()), c.now())
		}
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	rows := c.rows(ctx)
	out := make([]Summary, len(ids))
	type job struct {
		n   int
		sig sigs
		at  time.Time
	}
	var stale []job
	at := c.now()
	allSigs := indexSigs(dir, ids)
	for n, id := range ids {
		sig := allSigs[n]
		if r, ok := rows[id]; ok && sig.trusted(r.sig, r.at) {
			if s, err := decodeSummary(r.data); err == nil {
				s.ID = id
				out[n] = s
				c.Cached++
				continue
			}
		}
		stale = append(stale, job{n, sig, at})
	}
	// Read what the catalog could not vouch for, two at a time (store
	// commands are mostly waiting on the file system).
	var mu sync.Mutex
	var fresh []row
	var freshIDs []string
	jobs := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				id := ids[j.n]
				s := readSummary(ctx, id, open)
				out[j.n] = s
				if s.Err != nil {
					continue
				}
				mu.Lock()
				fresh = append(fresh, row{sig: j.sig.encode(), at: j.at.UnixNano(), data: encodeSummary(s)})
				freshIDs = append(freshIDs, id)
				mu.Unlock()
			}
		}()
	}
	for _, j := range stale {
		if ctx.Err() != nil {
			break
		}
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	// What was read is kept even when ctx ended: a sweep cut short by its
	// time budget leaves less for the next one to read.
	c.store1(context.WithoutCancel(ctx), freshIDs, fresh)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Read = len(stale)
	c.forget(ctx, rows, ids)
	return out, nil
}

// Refresh reads session id's index now and writes its summary to the
// catalog, whatever the catalog held: for a caller that has just changed
// the index and wants the next listing to need no read.
func (c *Catalog) Refresh(ctx context.Context, id string, open OpenFunc) Summary {
	at := c.now()
	sig := indexSig(SessionDir(c.store, id))
	s := readSummary(ctx, id, open)
	if s.Err == nil {
		c.store1(ctx, []string{id}, []row{{sig: sig.encode(), at: at.UnixNano(), data: encodeSummary(s)}})
	}
	return s
}

// Check compares the catalog's trusted summaries with the indexes they
// summarize, for verify: it returns the ids whose trusted row says
// something else than the index (a catalog that would mislead), each row
// rewritten from its index. Rows the catalog would not trust are not
// findings: they are read again anyway.
func (c *Catalog) Check(ctx context.Context, open OpenFunc) ([]string, error) {
	bad := []string{}
	if c.db == nil {
		return bad, nil
	}
	rows := c.rows(ctx)
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := rows[id]
		if !indexSig(SessionDir(c.store, id)).trusted(r.sig, r.at) {
			continue
		}
		s := readSummary(ctx, id, open)
		if s.Err != nil {
			continue
		}
		if string(encodeSummary(s)) != string(r.data) {
			bad = append(bad, id)
			c.Refresh(ctx, id, open)
		}
	}
	return bad, nil
}

// rows reads every catalog row; a catalog that cannot be read counts as
// empty.
func (c *Catalog) rows(ctx context.Context) map[string]row {
	out := map[string]row{}
	if c.db == nil {
		return out
	}
	rs, err := c.db.QueryContext(ctx, `SELECT id, sig, at, data FROM sessions`)
	if err != nil {
		return out
	}
	defer rs.Close()
	for rs.Next() {
		var id string
		var r row
		if err := rs.Scan(&id, &r.sig, &r.at, &r.data); err != nil {
			return map[string]row{}
		}
		out[id] = r
	}
	if rs.Err() != nil {
		return map[string]row{}
	}
	return out
}

// store1 writes rows in one transaction. A failure costs only a later
// read of the index, so it is not reported.
func (c *Catalog) store1(ctx context.Context, ids []string, rows []row) {
	if c.db == nil || len(rows) == 0 {
		return
	}
	inTx(ctx, c.db, nil, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO sessions (id, sig, at, data) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for i, r := range rows {
			if _, err := st.ExecContext(ctx, ids[i], r.sig, r.at, r.data); err != nil {
				return err
			}
		}
		return nil
	})
}

// forget drops the rows of sessions not in ids.
func (c *Catalog) forget(ctx context.Context, rows map[string]row, ids []string) {
	if c.db == nil {
		return
	}
	keep := map[string]bool{}
	for _, id := range ids {
		keep[id] = true
	}
	var gone []string
	for id := range rows {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return
	}
	inTx(ctx, c.db, nil, func(tx *sql.Tx) error {
		for _, id := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// readSummary reads session id's summary from its index.
func readSummary(ctx context.Context, id string, open OpenFunc) Summary {
	s := Summary{ID: id}
	x, err := open(ctx, id)
	if err != nil {
		return Summary{ID: id, Err: err}
	}
	defer x.Close()
	err = func() error {
		var err error
		if s.Workspace, err = x.Meta(ctx, "workspace"); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if s.Origin, err = x.Origin(ctx); err != nil {
			return err
		}
		if s.Turns, err = x.TurnRecords(ctx); err != nil {
			return err
		}
		if s.LastUse, err = x.LastUse(ctx); err != nil {
			return err
		}
		seen := map[cas.ID]bool{}
		undo := map[cas.ID]bool{}
		err = x.Refs(ctx, func(r Ref) error {
			if !seen[r.Blob] {
				seen[r.Blob] = true
				s.Refs = append(s.Refs, r.Blob)
			}
			if r.Kind == RefUndo && !undo[r.Blob] {
				undo[r.Blob] = true
				s.Undo = append(s.Undo, r.Blob)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Turn records name only blobs Refs names; should one not, it
		// joins Refs, so Refs stays every blob the summary names.
		for _, t := range s.Turns {
			for _, b := range t.Blobs {
				if !seen[b] {
					seen[b] = true
					s.Refs = append(s.Refs, b)
				}
			}
		}
		return nil
	}()
	if err != nil {
		return Summary{ID: id, Err: err}
	}
	return s
}

// cleanStaging deletes a staging directory older than stagingAge: what a
// creation or fork that crashed before its rename left behind.
func cleanStaging(path string, now time.Time) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || now.Sub(fi.ModTime()) < stagingAge {
		return
	}
	os.RemoveAll(path)
}
