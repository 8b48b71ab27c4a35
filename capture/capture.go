package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// Capturer records paths into a session's open turn. It is safe for
// concurrent use, and several processes may capture into one session.
type Capturer struct {
	ws    *Workspace
	idx   *checkpoints.Index
	store cas.Store
	// open opens a regular file for reading through an opener; a seam so
	// tests can make a read fail as an unprivileged user would see it
	// (tests run as root).
	open func(o *opener, rel string) (*os.File, fs.FileInfo, error)

	// rules keeps the .gitignore files scans parsed, by path, so an
	// unchanged one is not read again by the next scan.
	rulesMu sync.Mutex
	rules   map[string]parsedRules
	// blobsCommitted, when set (tests: a crash point), is called once
	// CaptureAll's blob commit has returned, before its index commit.
	blobsCommitted func()
}

// New returns a Capturer for the workspace, session index and blob store.
func New(ws *Workspace, idx *checkpoints.Index, store cas.Store) *Capturer {
	return &Capturer{ws: ws, idx: idx, store: store, open: (*opener).open}
}

// Result says what Capture did.
type Result struct {
	Path string // canonical workspace-relative path
	Turn int
	Step int // the step of the turn the capture went into (0: before any)
	// Recorded is false when the step already had this path, or the turn
	// had it from this step (the first touch per path per step wins).
	Recorded bool
	Snap     checkpoints.FileSnap
}

// Capture records p's current state into the open turn. p is absolute or
// relative to the workspace root. It fails with an error wrapping
// checkpoints.ErrNoOpenTurn, ErrOutsideWorkspace, ErrVCSDir, ErrSymlink or
// ErrNotRegular, or the read error for a file it cannot read; on any error
// nothing is recorded.
func (c *Capturer) Capture(ctx context.Context, p string) (Result, error) {
	return c.CaptureIn(ctx, checkpoints.StepRef{}, p)
}

// CaptureIn is Capture into the step ref names (see checkpoints.StepRef:
// the zero ref is the open turn's latest step). A path the turn captured
// in an earlier step is recorded again, once per step: its state before
// this tool call.
func (c *Capturer) CaptureIn(ctx context.Context, ref checkpoints.StepRef, p string) (Result, error) {
	// One path is CaptureAll's case too: the blob's commit runs while its
	// row is inserted, and the row commits once the blob is durable.
	res, errs := c.CaptureAllIn(ctx, ref, []string{p})
	if errs[0] != nil {
		return Result{}, errs[0]
	}
	return res[0], nil
}

// PutFunc stores content and returns its id and size: cas.Store.Put,
// cas.Batch.Put, or Hash to store nothing.
type PutFunc func(context.Context, io.Reader) (cas.ID, int64, error)

// Hash is a PutFunc that only hashes.
func Hash(_ context.Context, r io.Reader) (cas.ID, int64, error) { return cas.SumReader(r) }

// State reads the canonical path rel and stores its bytes in the blob
// store: the state a rewind can later put back. An absent path is a State
// with nil Content and the missing ancestors in Dirs. A symlink or other
// non-regular file is an error wrapping ErrSymlink or ErrNotRegular.
func (c *Capturer) State(ctx context.Context, rel string) (checkpoints.State, error) {
	return c.StateWith(ctx, rel, c.store.Put)
}

// StateWith is State with the bytes handed to put instead of the store:
// a batch's Put for many files, or Hash for comparisons and dry runs.
func (c *Capturer) StateWith(ctx context.Context, rel string, put PutFunc) (checkpoints.State, error) {
	st, _, err := c.StateSeen(ctx, rel, put)
	return st, err
}

// StateSeen is StateWith that also returns, for a regular file, the stat
// entry of the read (nil for an absent path): what CommitIf needs to tell
// from the path's stat alone, under the stat cache's racy rule, that the
// file still holds the bytes read here, without reading them again.
func (c *Capturer) StateSeen(ctx context.Context, rel string, put PutFunc) (checkpoints.State, *checkpoints.StatEntry, error) {
	o := c.ws.opener()
	defer o.close()
	return c.stateSeen(ctx, o, rel, put)
}

// stateSeen is StateSeen opening rel through o.
func (c *Capturer) stateSeen(ctx context.Context, o *opener, rel string, put PutFunc) (checkpoints.State, *checkpoints.StatEntry, error) {
	at := time.Now().UnixNano() // before the stat: an earlier moment only makes the entry racy sooner
	// Most paths are regular files: open first, and walk to the path a
	// second time (Inspect) only to say why one cannot be opened.
	f, fi, err := c.open(o, rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrSymlink) && !errors.Is(err, ErrNotRegular) && !errors.Is(err, ErrVCSDir) {
			return checkpoints.State{}, nil, err
		}
		e, ierr := c.ws.Inspect(rel)
		if ierr != nil {
			return checkpoints.State{}, nil, ierr
		}
		switch e.Kind {
		case Absent:
			return checkpoints.State{Dirs: e.Missing}, nil, nil
		case Unsafe:
			return checkpoints.State{}, nil, fmt.Errorf("capture: %s: %w", rel, e.Reason)
		}
		return checkpoints.State{}, nil, err // a file appeared since the open failed
	}
	defer f.Close()
	id, n, err := put(ctx, statted{contentReader(f, fi), fi})
	if err != nil {
		return checkpoints.State{}, nil, fmt.Errorf("capture: %s: %w", rel, err)
	}
	if n != fi.Size() {
		return checkpoints.State{}, nil, fmt.Errorf("capture: %s: file changed while it was read (%d bytes, then %d)", rel, fi.Size(), n)
	}
	seen := readEntry(rel, fi, id, n, at)
	return checkpoints.State{Content: &id, Mode: fi.Mode().Perm(), Size: n}, &seen, nil
}

// statted is an open file's content whose Stat returns what opening it
// found, so the blob store's size check (a Stat of what it is given)
// costs no second system call.
type statted struct {
	io.Reader
	fi fs.FileInfo
}

func (s statted) Stat() (fs.FileInfo, error) { return s.fi, nil }
