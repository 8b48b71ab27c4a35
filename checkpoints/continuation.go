package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/migrations"
)

// Continuation says that an agent's session ID, which has no index of its
// own, continues session Session of the store: a Claude Code conversation
// forked by a rewind, whose hook events are recorded into the session it
// was forked from. At is the agent's conversation entry the fork began
// after ("" when unknown) and In the agent session whose transcript holds
// it (Session when the record does not say).
//
// The fact is a meta row of Session's index (AddContinuation), written in
// one transaction; the catalog finds it by ID (Catalog.Continuation)
// without opening every index, and rebuilds what it knows from the
// indexes whenever it cannot vouch for it.
type Continuation struct {
	ID, Session, At, In string
}

// metaContinuedBy prefixes the meta rows of the continuations of a
// session: key metaContinuedBy+ID, value At and In on a line each. Every
// such key sorts below continuedByEnd.
const (
	metaContinuedBy = "continued_by."
	continuedByEnd  = "continued_by/"
)

// AddContinuation records in x, the index of c.Session, that agent
// session c.ID continues it.
func (x *Index) AddContinuation(ctx context.Context, c Continuation) error {
	if !ValidSession(c.ID) {
		return fmt.Errorf("checkpoints: continuation %q: %w", c.ID, ErrBadSession)
	}
	return x.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, metaContinuedBy+c.ID, c.At+"\n"+c.In)
		return err
	})
}

// RemoveContinuation forgets, in x, that agent session id continues it.
func (x *Index) RemoveContinuation(ctx context.Context, id string) error {
	return x.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, metaContinuedBy+id)
		return err
	})
}

// Continuations lists the agent sessions that continue x, the index of
// session.
func (x *Index) Continuations(ctx context.Context, session string) ([]Continuation, error) {
	rs, err := x.db.QueryContext(ctx, `SELECT key, value FROM meta WHERE key > ? AND key < ?`, metaContinuedBy, continuedByEnd)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: continuations: %w", err)
	}
	defer rs.Close()
	var out []Continuation
	for rs.Next() {
		var k, v string
		if err := rs.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("checkpoints: continuations: %w", err)
		}
		at, in, _ := strings.Cut(v, "\n")
		out = append(out, Continuation{ID: strings.TrimPrefix(k, metaContinuedBy), Session: session, At: at, In: in})
	}
	return out, rs.Err()
}

// readLinkFile reads the LinkFile of an older store's link directory
// sessions/id: the session it continues, the entry the fork began after
// and the agent session whose transcript holds it, a line each.
func readLinkFile(store, id string) (Continuation, bool) {
	b, err := os.ReadFile(filepath.Join(SessionDir(store, id), LinkFile))
	if err != nil {
		return Continuation{}, false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	c := Continuation{ID: id, Session: strings.TrimSpace(lines[0])}
	if !ValidSession(c.Session) {
		return Continuation{}, false
	}
	if len(lines) > 1 {
		c.At = strings.TrimSpace(lines[1])
	}
	if len(lines) > 2 && ValidSession(strings.TrimSpace(lines[2])) {
		c.In = strings.TrimSpace(lines[2])
	}
	return c, true
}

// Continuation returns what continues agent session id, ok false when
// nothing does. The catalog answers from its table once it has been built
// from the indexes: on first use (a new or rebuilt catalog, or a store an
// older ckpt made) every index's continuations are read, and every link
// directory an older ckpt made (a LinkFile naming the session) is recorded
// in the index of the session it names, which then proves it; the link
// directory stays (every store walker passes over it). open opens a
// session's index for writing, never creating one.
func (c *Catalog) Continuation(ctx context.Context, id string, open OpenFunc) (Continuation, bool, error) {
	if c.db != nil {
		// A catalog that cannot answer (busy past its timeout) is a
		// cache: the indexes are read instead.
		var n int
		if err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM continuations_built`).Scan(&n); err == nil && n > 0 {
			co := Continuation{ID: id}
			err := c.db.QueryRowContext(ctx, `SELECT session, at, at_in FROM continuations WHERE id = ?`, id).Scan(&co.Session, &co.At, &co.In)
			if err == sql.ErrNoRows {
				// A link file an older ckpt still running wrote since
				// the build (one stat), naming a session the store has,
				// is read by building again.
				co, link := readLinkFile(c.store, id)
				if _, err := os.Lstat(filepath.Join(SessionDir(c.store, co.Session), FileName)); !link || err != nil {
					return Continuation{}, false, nil
				}
			} else if err == nil {
				return c.proven(ctx, co, open)
			}
		}
	}
	all, err := c.buildContinuations(ctx, open)
	if err != nil {
		return Continuation{}, false, err
	}
	for _, co := range all {
		if co.ID == id {
			return co, true, nil
		}
	}
	return Continuation{}, false, nil
}

// proven returns co, a continuation the catalog's table holds, when the
// index of co.Session records it: the table is a cache, and a session
// removed and made again under its id continues nothing. An index that
// cannot be read is an error, never "nothing continues it".
func (c *Catalog) proven(ctx context.Context, co Continuation, open OpenFunc) (Continuation, bool, error) {
	if _, err := os.Lstat(filepath.Join(SessionDir(c.store, co.Session), FileName)); errors.Is(err, os.ErrNotExist) {
		return Continuation{}, false, nil // removed since
	}
	x, err := open(ctx, co.Session)
	if err != nil {
		return Continuation{}, false, err
	}
	cs, err := x.Continuations(ctx, co.Session)
	if err = errors.Join(err, x.Close()); err != nil {
		return Continuation{}, false, err
	}
	for _, r := range cs {
		if r.ID == co.ID {
			return r, true, nil
		}
	}
	return Continuation{}, false, nil
}

// buildContinuations reads every continuation the store's indexes and
// older link directories hold (recording the latter in the indexes they
// name) and, when the catalog can be written, fills its table with them
// and marks it built.
func (c *Catalog) buildContinuations(ctx context.Context, open OpenFunc) ([]Continuation, error) {
	ids, err := Sessions(c.store)
	if err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, id := range ids {
		has[id] = true
	}
	// An older ckpt's link directories, naming a session of the store.
	ents, _ := os.ReadDir(filepath.Join(c.store, "sessions"))
	legacy := map[string][]Continuation{}
	for _, e := range ents {
		if !e.IsDir() || !IsLink(filepath.Join(c.store, "sessions", e.Name())) {
			continue
		}
		if co, ok := readLinkFile(c.store, e.Name()); ok && has[co.Session] {
			legacy[co.Session] = append(legacy[co.Session], co)
		}
	}
	var all []Continuation
	complete := true // every index read, every link recorded
	known := map[string]bool{}
	for _, id := range ids {
		x, err := open(ctx, id)
		if err != nil {
			complete = false // an unreadable index continues nothing it could prove, yet
			continue
		}
		cs, err := x.Continuations(ctx, id)
		x.Close()
		if err != nil {
			complete = false
			continue
		}
		for _, co := range cs {
			known[co.ID] = true
		}
		all = append(all, cs...)
	}
	// A link is recorded only while no index records its id: a row this
	// ckpt wrote is newer than an older ckpt's link file.
	for session, cs := range legacy {
		var add []Continuation
		for _, co := range cs {
			if !known[co.ID] {
				add = append(add, co)
			}
		}
		if len(add) == 0 {
			continue
		}
		x, err := open(ctx, session)
		for _, co := range add {
			if err != nil || x.AddContinuation(ctx, co) != nil {
				complete = false // the link file still says it
			}
			all = append(all, co)
		}
		if err == nil {
			x.Close()
		}
	}
	if c.db == nil || !complete {
		// What an index could not say is not absent: the table stays
		// unbuilt, and the next lookup reads the indexes again.
		return all, nil
	}
	// Rows only get added: a row another process noted meanwhile
	// (NoteContinuation, after its index recorded it) is newer than what
	// this scan read. A failure leaves the table unbuilt: the next lookup
	// reads the indexes again.
	inTx(ctx, c.db, nil, func(tx *sql.Tx) error {
		for _, co := range all {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO continuations (id, session, at, at_in) VALUES (?, ?, ?, ?)`, co.ID, co.Session, co.At, co.In); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO continuations_built (done) VALUES (1)`)
		return err
	})
	return all, nil
}

// NoteContinuation makes the catalog know that co.ID continues co.Session
// (co.Session empty: that nothing continues co.ID), after the index of
// the session has recorded it. A catalog not built yet learns it when it
// is.
func (c *Catalog) NoteContinuation(ctx context.Context, co Continuation) error {
	if c.db == nil {
		return nil
	}
	var err error
	if co.Session == "" {
		_, err = c.db.ExecContext(ctx, `DELETE FROM continuations WHERE id = ?`, co.ID)
	} else {
		_, err = c.db.ExecContext(ctx, `INSERT OR REPLACE INTO continuations (id, session, at, at_in) VALUES (?, ?, ?, ?)`, co.ID, co.Session, co.At, co.In)
	}
	if err != nil && (ctx.Err() != nil || migrations.IsBusy(err)) {
		return fmt.Errorf("checkpoints: catalog: %w", err)
	}
	if err != nil {
		// A catalog that opens but cannot be written (damaged pages) is
		// a cache: it goes, as one that cannot be opened does, and the
		// next one is built from the indexes, which hold co.
		c.db.Close()
		c.db = nil
		discardCatalog(filepath.Join(c.store, catalogFile))
	}
	return nil
}

// ErrIndexInUse is returned by Unshared for an index another connection
// has open.
var ErrIndexInUse = errors.New("index open elsewhere")

// Unshared takes session id's index out of WAL mode, which SQLite allows
// only while no other connection has the file open: an index about to be
// deleted (replaced by a fork of another session, see controller.Adopt)
// is then open nowhere a write could land in the deleted file. It fails
// wrapping ErrIndexInUse when another connection has it open.
func Unshared(ctx context.Context, store, id string) error {
	path := filepath.Join(SessionDir(store, id), FileName)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rw") // never creates one
	if err != nil {
		return fmt.Errorf("checkpoints: session %s: %w", id, err)
	}
	defer db.Close()
	var mode string
	err = db.QueryRowContext(ctx, `PRAGMA journal_mode=DELETE`).Scan(&mode)
	if migrations.IsBusy(err) || (err == nil && mode != "delete") {
		return fmt.Errorf("checkpoints: session %s: %w", id, ErrIndexInUse)
	}
	if err != nil {
		return fmt.Errorf("checkpoints: session %s: %w", id, err)
	}
	return nil
}
