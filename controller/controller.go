package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/gofrs/flock"
)

// Errors returned by the controller. Callers test them with errors.Is; the
// index's and capture's sentinels (checkpoints.ErrNoOpenTurn,
// capture.ErrOutsideWorkspace, ...) pass through wrapped.
var (
	// ErrNoTurn is wrapped when a rewind or diff names a turn that is not
	// in the active history.
	ErrNoTurn = errors.New("no such turn")
	// ErrBadSession is wrapped when a session id is not a safe name.
	ErrBadSession = errors.New("session id must be 1-128 letters, digits, '.', '_' or '-', not starting with '.'")
	// ErrWorkspaceMismatch is wrapped when a session is opened for a
	// workspace other than the one it was created for.
	ErrWorkspaceMismatch = errors.New("session belongs to another workspace")
	// ErrBusy is wrapped when another process holds the session's rewind
	// lock for longer than the wait.
	ErrBusy = errors.New("another rewind or undo of this session is running")
)

// DefaultSession is the session id used when none is given.
const DefaultSession = "default"

var sessionRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// ValidSession reports whether id is usable as a session id.
func ValidSession(id string) bool { return sessionRE.MatchString(id) }

// Options says what to open.
type Options struct {
	Workspace string // the workspace root; required
	Session   string // session id; DefaultSession when empty
	Store     string // the store directory holding blobs/ and sessions/; required
	// Clock overrides time.Now (tests).
	Clock func() time.Time
}

// Controller drives one session. It is safe for concurrent use.
type Controller struct {
	session string
	ws      *capture.Workspace
	store   *cas.Disk
	idx     *checkpoints.Index
	cap     *capture.Capturer
	lock    *flock.Flock

	mu   sync.Mutex
	subs map[int]func(Event)
	next int
}

// SessionDir returns the directory of session id in store.
func SessionDir(store, id string) string { return filepath.Join(store, "sessions", id) }

// BlobDir returns the blob store's directory in store.
func BlobDir(store string) string { return filepath.Join(store, "blobs") }

// Open opens (creating on first use) the session for the workspace. A rewind
// or undo that a crash left unfinished is completed before Open returns.
func Open(ctx context.Context, o Options) (*Controller, error) {
	if o.Session == "" {
		o.Session = DefaultSession
	}
	if !ValidSession(o.Session) {
		return nil, fmt.Errorf("controller: session %q: %w", o.Session, ErrBadSession)
	}
	if o.Store == "" || o.Workspace == "" {
		return nil, errors.New("controller: workspace and store directories are required")
	}
	ws, err := capture.NewWorkspace(o.Workspace)
	if err != nil {
		return nil, err
	}
	store, err := cas.OpenDisk(ctx, BlobDir(o.Store))
	if err != nil {
		return nil, err
	}
	var opts []checkpoints.Option
	if o.Clock != nil {
		opts = append(opts, checkpoints.WithClock(o.Clock))
	}
	dir := SessionDir(o.Store, o.Session)
	idx, err := checkpoints.Open(ctx, dir, opts...)
	if err != nil {
		store.Close()
		return nil, err
	}
	c := &Controller{
		session: o.Session, ws: ws, store: store, idx: idx,
		cap:  capture.New(ws, idx, store),
		lock: flock.New(filepath.Join(dir, "ops.lock")),
		subs: map[int]func(Event){},
	}
	root, err := idx.InitMeta(ctx, "workspace", ws.Root())
	if err == nil && root != ws.Root() {
		err = fmt.Errorf("controller: session %s is for %s, not %s: %w", o.Session, root, ws.Root(), ErrWorkspaceMismatch)
	}
	if err == nil {
		err = c.recoverPending(ctx)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the session's files.
func (c *Controller) Close() error {
	return errors.Join(c.idx.Close(), c.store.Close())
}

// Session returns the session id.
func (c *Controller) Session() string { return c.session }

// Workspace returns the workspace.
func (c *Controller) Workspace() *capture.Workspace { return c.ws }

// Store returns the blob store.
func (c *Controller) Store() cas.Store { return c.store }

// Index returns the session index.
func (c *Controller) Index() *checkpoints.Index { return c.idx }

// BeginTurn opens the next turn with prompt (recorded as its user message)
// after recording the state the previous turn left its captured paths in.
func (c *Controller) BeginTurn(ctx context.Context, prompt string) (checkpoints.Checkpoint, error) {
	var ends []checkpoints.PathEnd
	prev, err := c.idx.OpenTurn(ctx)
	if err == nil {
		prev, err = c.idx.Turn(ctx, prev.Turn)
	}
	if err == nil {
		for _, f := range prev.Files {
			st, err := c.cap.State(ctx, f.Path)
			if err != nil {
				continue // a symlink or unreadable file now: its end stays unknown
			}
			ends = append(ends, checkpoints.PathEnd{Path: f.Path, State: st})
		}
	} else if !errors.Is(err, checkpoints.ErrNoOpenTurn) {
		return checkpoints.Checkpoint{}, err
	}
	cp, err := c.idx.BeginTurn(ctx, prompt, ends)
	if err != nil {
		return checkpoints.Checkpoint{}, err
	}
	c.emit(Event{Kind: EventTurnOpened, Turn: cp.Turn})
	return cp, nil
}

// Capture records path's current state into the open turn (see
// capture.Capturer.Capture for the errors).
func (c *Controller) Capture(ctx context.Context, path string) (capture.Result, error) {
	res, err := c.cap.Capture(ctx, path)
	if err != nil {
		return res, err
	}
	if res.Recorded {
		c.emit(Event{Kind: EventCaptured, Turn: res.Turn, Path: res.Path})
	}
	return res, nil
}

// AppendMessage appends a message to the open turn.
func (c *Controller) AppendMessage(ctx context.Context, role, text string) (checkpoints.Message, error) {
	m, err := c.idx.AppendMessage(ctx, role, text)
	if err != nil {
		return m, err
	}
	c.emit(Event{Kind: EventMessage, Turn: m.Turn})
	return m, nil
}

// Conversation returns the active conversation.
func (c *Controller) Conversation(ctx context.Context) ([]checkpoints.Message, error) {
	return c.idx.Conversation(ctx)
}

// withLock runs fn holding the session's op lock, which serialises rewinds,
// undos and crash recovery across processes.
func (c *Controller) withLock(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ok, err := c.lock.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			err = ErrBusy
		}
		return fmt.Errorf("controller: lock session %s: %w", c.session, err)
	}
	defer c.lock.Unlock()
	return fn()
}
