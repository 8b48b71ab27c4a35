package remote

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	"github.com/ckpt/ckpt/checkpoints"
)

// DBFile is the store's record of what it has put on remotes:
// STORE/remote.db. Rows are keyed by the remote's URL, so a store synced to
// two remotes keeps both apart.
//
//	packs(remote, key, size, entries)         packs this store uploaded or read
//	blob_packs(remote, blob, pack)            the pack that holds each blob
//	heads(remote, session, remote_session, etag, index_sum)
//	                                          the last HEAD this store wrote or
//	                                          pulled for a local session
//
// A row is written only after the object it names is durable remotely.
const DBFile = "remote.db"

const schema = `
CREATE TABLE IF NOT EXISTS packs (
	remote  TEXT    NOT NULL,
	key     TEXT    NOT NULL,
	size    INTEGER NOT NULL,
	entries INTEGER NOT NULL,
	PRIMARY KEY (remote, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blob_packs (
	remote TEXT NOT NULL,
	blob   BLOB NOT NULL,
	pack   TEXT NOT NULL,
	PRIMARY KEY (remote, blob)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS heads (
	remote         TEXT NOT NULL,
	session        TEXT NOT NULL,
	remote_session TEXT NOT NULL,
	etag           TEXT NOT NULL,
	index_sum      TEXT NOT NULL,
	PRIMARY KEY (remote, session)
) WITHOUT ROWID;
`

func openDB(ctx context.Context, store string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", checkpoints.DSN(filepath.Join(store, DBFile)))
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("remote: %s: %w", DBFile, err)
	}
	return db, nil
}

type headRow struct {
	remoteSession, etag, indexSum string
}

func (r *Remote) head(ctx context.Context, session string) (headRow, bool, error) {
	var h headRow
	err := r.db.QueryRowContext(ctx, `SELECT remote_session, etag, index_sum FROM heads WHERE remote = ? AND session = ?`,
		r.url, session).Scan(&h.remoteSession, &h.etag, &h.indexSum)
	if err == sql.ErrNoRows {
		return h, false, nil
	}
	return h, err == nil, err
}

func (r *Remote) setHead(ctx context.Context, session string, h headRow) error {
	_, err := r.db.ExecContext(ctx, `INSERT OR REPLACE INTO heads (remote, session, remote_session, etag, index_sum) VALUES (?, ?, ?, ?, ?)`,
		r.url, session, h.remoteSession, h.etag, h.indexSum)
	return err
}

// recordPack records a durable pack and the blobs it holds.
func (r *Remote) recordPack(ctx context.Context, p PackRef, es []Entry) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO packs (remote, key, size, entries) VALUES (?, ?, ?, ?)`,
		r.url, p.Key, p.Size, p.Entries); err != nil {
		return err
	}
	for _, e := range es {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO blob_packs (remote, blob, pack) VALUES (?, ?, ?)`,
			r.url, e.ID, p.Key); err != nil {
			return err
		}
	}
	return tx.Commit()
}
