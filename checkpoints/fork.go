package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is wrapped by CopyTo when the target session already has an
// index.
var ErrExists = errors.New("session already exists")

// CopyTo writes a consistent copy of the whole index (every turn, hidden
// or not, snapshot, message, op and manifest, and the meta) as the index
// of session directory dir, which must not hold one yet (ErrExists); dir
// may exist without an index. Blob
// ids are copied, never blob bytes: a copy in the same store shares them.
// The caller holds the session's op lock, so no op is half done; CopyTo
// fails if one is.
func (x *Index) CopyTo(ctx context.Context, dir string) error {
	dst := filepath.Join(dir, FileName)
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
	}
	if _, err := x.PendingOp(ctx); err == nil {
		return fmt.Errorf("checkpoints: copy to %s: a rewind or undo is unfinished", dir)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	// The copy is made in a hidden staging directory and renamed into
	// place whole, so retention never meets the new session directory
	// without its index (see createSession).
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, ".new-"+filepath.Base(dir)+"-")
	if err != nil {
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, FileName)
	// VACUUM INTO writes the file from one read transaction and fsyncs it;
	// it fills the empty file made private first, rather than creating one
	// with SQLite's default mode.
	if err := createPrivate(staged); err != nil {
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
	}
	if _, err := x.db.ExecContext(ctx, `VACUUM INTO ?`, staged); err != nil {
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		// The directory is there already, without an index: it holds a
		// front-end's own files (an agent hook's lock and marks). The
		// index alone goes in, linked so that it never replaces one
		// another process put there first.
		if err := os.Link(staged, dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("checkpoints: copy to %s: %w", dir, ErrExists)
			}
			return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
		}
		return syncParent(dir)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dst); serr == nil {
			return fmt.Errorf("checkpoints: copy to %s: %w", dir, ErrExists)
		}
		return fmt.Errorf("checkpoints: copy to %s: %w", dir, err)
	}
	return syncParent(parent)
}

// summarize applies a summarize op as FinishOp commits it: the shown
// messages of the active turns numbered op.Turn and above (from) or below
// op.Turn (up to) get hidden_by op, and op.Prompt becomes one system
// message added_by op, in the first summarized turn (from) or the last one
// (up to), so it sits where the summarized messages were.
func summarize(ctx context.Context, tx *sql.Tx, op Op) error {
	cond, anchor := `number >= ?`, op.Turn
	if op.Action == ActionSummarizeUpTo {
		cond, anchor = `number < ?`, op.Turn-1
	}
	var turnID int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM turns WHERE hidden_by IS NULL AND number = ?`, anchor).Scan(&turnID)
	if err != nil {
		return fmt.Errorf("summarize turn %d: %w", anchor, notFound(err))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET hidden_by = ? WHERE hidden_by IS NULL
		AND turn_id IN (SELECT id FROM turns WHERE hidden_by IS NULL AND `+cond+`)`, op.ID, op.Turn); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO messages (turn_id, role, text, time, added_by) VALUES (?, 'system', ?, ?, ?)`,
		turnID, op.Prompt, op.Time.UnixNano(), op.ID)
	return err
}

// unsummarize reverses summarize op rw as undo op undo commits: the
// messages rw hid are shown again and its summary is hidden (kept, like
// everything an op touched).
func unsummarize(ctx context.Context, tx *sql.Tx, rw Op, undo int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET hidden_by = NULL WHERE hidden_by = ?`, rw.ID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE messages SET hidden_by = ? WHERE added_by = ? AND hidden_by IS NULL`, undo, rw.ID)
	return err
}
