package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/gofrs/flock"
)

// Options says what to open.
type Options struct {
	Workspace string // the workspace root; required
	Session   string // session id; the workspace's default (WorkspaceSession) when empty
	// Store is the store directory holding blobs/ and sessions/: required
	// by Open; Store.Open opens a session of its own store.
	Store string
	// Clock overrides time.Now wherever the controller reads the time:
	// turn, message and op times, and retention's ages (tests).
	Clock func() time.Time
	// NoAutoRetention turns off the retention the store's config.json asks
	// for (a daily sweep at Open, quota enforcement when a turn opens).
	NoAutoRetention bool
	// Logger receives what the caller is not told: failures of automatic
	// retention, which never fail the call that triggered it. nil
	// discards them.
	Logger *slog.Logger
	// Scan tunes scan mode's scans (limits, budget, ignore rules); the
	// zero value takes the defaults.
	Scan capture.ScanOptions
	// ChangeLogKeep is how many of the newest changes this Controller
	// leaves in the session's change log when it trims it (Watch); zero
	// means checkpoints.DefaultChangeLogKeep.
	ChangeLogKeep int
	// NoCreate makes Open fail wrapping ErrNotFound, creating nothing
	// (not even the store directory), when the store has never had the
	// session: for a front-end's commands that only read or rewind.
	NoCreate bool
	// ExitAfterClose says the process exits as soon as Close returns (a
	// command-line tool): the blob store, when Close closes it, leaves a
	// small WAL for the next process instead of checkpointing it (two
	// fsyncs saved, and two more on the next write). The session's index
	// is checkpointed either way: that makes its last rows durable and
	// keeps a session directory to one file.
	ExitAfterClose bool
	// Recovered, when set, is told what Open did about a rewind or undo
	// that a crash (or Ctrl-C) left unfinished, if there was one:
	// "finished an interrupted rewind of turn 3 (scope code)", or "rolled
	// back ..." when a blob it needed could no longer be read. A
	// front-end shows it: the files moved.
	Recovered func(what string)
	// lockHeld says the caller holds the session's rewind lock (Adopt,
	// forking into the session it replaces): the Controller's ops run
	// under it without taking it again.
	lockHeld bool
}

// Controller drives one session. It is safe for concurrent use.
type Controller struct {
	root    *Store // the Store it was opened from
	st      *Store // root with this Controller's clock and logger
	session string
	ws      *capture.Workspace
	store   *cas.Disk // st's blob store
	idx     *checkpoints.Index
	cap     *capture.Capturer
	lock    *flock.Flock
	held    bool // the opener holds lock (Options.lockHeld)
	noAuto  bool
	scan    capture.ScanOptions
	now     func() time.Time
	log     *slog.Logger
	// recovered says what Open did about an op a crash left unfinished.
	recovered string
	// exitAfterClose is Options.ExitAfterClose.
	exitAfterClose bool
	// opened is the index file as Open found it (see Replaced).
	opened os.FileInfo

	// beforeReplace, when set (tests), is called just before apply
	// looks at a path for the last time and replaces or deletes it; hookMu
	// makes the calls one at a time.
	beforeReplace func(rel string)
	hookMu        sync.Mutex
}

// Open opens (creating on first use) the session for the workspace, in the
// store directory Options.Store: OpenStore and Store.Open in one, for a
// process that works on one session (a CLI command). Its Close closes the
// store too.
func Open(ctx context.Context, o Options) (*Controller, error) {
	s := OpenStore(o.Store)
	defer s.Close() // the blob store stays open until the Controller closes
	return s.Open(ctx, o)
}

// Open opens (creating on first use) the session for the workspace; every
// Controller opened from s shares its blob store. A rewind or undo that a
// crash left unfinished is completed before Open returns. A session the
// store has had (see checkpoints.OpenSession) whose index is missing or
// empty fails with a *retention.NoIndexError (retention.ErrNoIndex). Options.Store
// may be left empty: the session is s's (another directory is an error).
func (s *Store) Open(ctx context.Context, o Options) (*Controller, error) {
	if o.Store != "" && o.Store != s.dir {
		return nil, fmt.Errorf("controller: open a session of store %s from store %s", o.Store, s.dir)
	}
	o.Store = s.dir
	if o.Store == "" || o.Workspace == "" {
		return nil, errors.New("controller: workspace and store directories are required")
	}
	ws, err := capture.NewWorkspace(o.Workspace)
	if err != nil {
		return nil, err
	}
	if o.Session == "" {
		o.Session = WorkspaceSession(ws.Root())
	}
	if !checkpoints.ValidSession(o.Session) {
		return nil, fmt.Errorf("controller: session %q: %w", o.Session, checkpoints.ErrBadSession)
	}
	if o.NoCreate && !s.hasSession(o.Session) {
		ws.Close()
		return nil, fmt.Errorf("controller: session %s: %w", o.Session, noSessionError{})
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	store, err := s.disk(ctx, true)
	if err != nil {
		ws.Close()
		return nil, err
	}
	st := s.withClock(o.Clock, o.Logger)
	dir := checkpoints.SessionDir(o.Store, o.Session)
	iopts := []checkpoints.Option{checkpoints.WithClock(o.Clock)}
	if o.ChangeLogKeep > 0 {
		iopts = append(iopts, checkpoints.WithChangeLogKeep(o.ChangeLogKeep))
	}
	// A session the store has had and whose index is lost is an error
	// (a *retention.NoIndexError), never a new empty session in its place.
	idx, err := checkpoints.OpenSession(ctx, o.Store, o.Session, true, iopts...)
	if err != nil {
		s.release(false)
		ws.Close()
		return nil, err
	}
	c := &Controller{
		root: s, st: st,
		session: o.Session, ws: ws, store: store, idx: idx,
		cap:            capture.New(ws, idx, store),
		lock:           flock.New(filepath.Join(dir, "ops.lock")),
		held:           o.lockHeld,
		noAuto:         o.NoAutoRetention,
		exitAfterClose: o.ExitAfterClose,
		scan:           o.Scan,
		now:            o.Clock,
		log:            o.Logger,
	}
	c.opened, _ = os.Stat(c.indexPath())
	root, err := idx.InitMeta(ctx, "workspace", ws.Root())
	if err == nil && root != ws.Root() {
		err = fmt.Errorf("controller: session %s is for %s, not %s: %w", o.Session, root, ws.Root(), ErrWorkspaceMismatch)
	}
	if err == nil {
		err = s.markWorkspace(ws.Root())
	}
	if err == nil {
		err = c.recoverPending(ctx)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.recovered != "" && o.Recovered != nil {
		o.Recovered(c.recovered)
	}
	if !c.noAuto {
		c.st.autoRetain(ctx, c.session)
	}
	return c, nil
}

// Close releases the session's files, and the blob store when it was the
// last user of a closed Store (see Options.ExitAfterClose).
func (c *Controller) Close() error {
	return errors.Join(c.idx.Close(), c.st.release(c.exitAfterClose), c.ws.Close())
}

// Replaced reports whether the session's index file is no longer the one
// c opened: another process replaced it (Store.Adopt, a fork into the
// session's id) or removed it. c then reads and writes a file no other
// process sees: a front-end that keeps Controllers open (a server) closes
// it and opens the session again.
func (c *Controller) Replaced() bool {
	fi, err := os.Stat(c.indexPath())
	return err != nil || c.opened == nil || !os.SameFile(fi, c.opened)
}

// indexPath is the session's index file.
func (c *Controller) indexPath() string { return filepath.Join(c.idx.Dir(), checkpoints.FileName) }

// Session returns the session id.
func (c *Controller) Session() string { return c.session }

// WorkspaceRoot returns the workspace root: absolute, symlinks resolved.
func (c *Controller) WorkspaceRoot() string { return c.ws.Root() }

// Store returns the store the session was opened from (for Open, the
// store it opened, which closes with the Controller).
func (c *Controller) Store() *Store { return c.root }

// TurnOptions modify BeginTurn.
type TurnOptions struct {
	// Scan takes a manifest of the whole workspace as the turn opens, so a
	// code rewind to it also undoes shell side effects (scan mode). The
	// session setting (SetMeta "scan") turns it on for every turn.
	Scan bool
	// Progress, if set, is called during the scan with the count of files
	// found so far (see capture.ScanOptions.Progress).
	Progress func(files int)
	// Ensure opens the turn only when the session has no open turn: what
	// agent hooks ask before their first capture. They run in parallel,
	// in several processes, so the check and the open happen under a
	// per-session lock file, and two first tool calls open one turn, not
	// two. TurnResult.Opened says whether it opened one; when a turn was
	// open already the result is otherwise zero.
	Ensure bool
	// EnsureScanned is Ensure that also opens a turn when the open one
	// has no workspace manifest: an agent starting or resuming a session
	// in scan mode asks it so that a code rewind can reach the workspace
	// as it was before the agent's first action.
	EnsureScanned bool
	// Relabel opens no turn: it gives the open turn prompt, in the turn
	// and in its user message, when its prompt is still Relabel (a label
	// a hook gave a turn it opened before the agent showed the prompt;
	// see checkpoints.Index.Relabel). With no open turn, or one labelled
	// otherwise, it changes nothing. The result is zero.
	Relabel string
}

// TurnResult is what BeginTurn did.
type TurnResult struct {
	Checkpoint // the turn opened (zero when Ensure found one open)
	// Opened is false when Ensure or EnsureScanned found a turn open that
	// will do, and opened none.
	Opened bool
	// Scan describes the scan, when one ran and finished. Its Stats are
	// nil: they were saved as the session's stat cache.
	Scan *capture.ScanResult
	// Warning is set when a scan was asked for and could not be done (over
	// its time budget, or a home directory or filesystem root): the turn is
	// open without a manifest, and edit-tool captures work as ever.
	Warning string
}

// BeginTurn opens the next turn with prompt (recorded as its user
// message) after recording the state the previous turn left its captured
// paths in; in scan mode it first takes the workspace's manifest. With
// TurnOptions.Ensure it opens one only when none is open.
func (c *Controller) BeginTurn(ctx context.Context, prompt string, o TurnOptions) (TurnResult, error) {
	switch {
	case o.Relabel != "":
		_, err := c.idx.Relabel(ctx, o.Relabel, prompt)
		return TurnResult{}, err
	case o.EnsureScanned:
		return c.ensureTurn(ctx, prompt, func(open checkpoints.Checkpoint) bool { return open.Scanned })
	case o.Ensure:
		return c.ensureTurn(ctx, prompt, func(checkpoints.Checkpoint) bool { return true })
	}
	var res TurnResult
	release, err := c.store.Hold(ctx) // new blobs until the rows naming them commit
	if err != nil {
		return res, err
	}
	defer release()
	seen, ends, err := c.turnEnds(ctx)
	if err != nil {
		return res, err
	}
	var manifest *checkpoints.Manifest
	if scan, inherited, err := c.scanOn(ctx, o); err != nil {
		return res, err
	} else if scan {
		found, restore := lowerGCForScan()
		defer restore() // once the manifest is in the index
		sr, warning, err := c.scanForTurn(ctx, o.Progress, found, inherited)
		if err != nil {
			return res, err
		}
		res.Warning = warning
		if sr != nil {
			res.Scan, manifest = sr, &sr.Manifest
		}
	}
	// Another process may open a turn or capture into the open one while
	// the ends are read: then they are read again (BeginTurnAfter).
	cp, err := c.idx.BeginTurnAfter(ctx, prompt, seen, ends, manifest)
	for try := 1; errors.Is(err, checkpoints.ErrStale) && try < maxTurnTries; try++ {
		if seen, ends, err = c.turnEnds(ctx); err == nil {
			cp, err = c.idx.BeginTurnAfter(ctx, prompt, seen, ends, manifest)
		}
	}
	release() // before enforceQuota, whose collector waits for every hold
	if err != nil {
		return res, err
	}
	res.Checkpoint, res.Opened = Checkpoint{Checkpoint: cp}, true
	c.noteActive()
	if !c.noAuto {
		c.st.enforceQuota(ctx, c.session)
	}
	return res, nil
}

// ensureTurn opens a turn with prompt under the session's hook lock unless
// there is an open turn and enough says it will do.
func (c *Controller) ensureTurn(ctx context.Context, prompt string, enough func(open checkpoints.Checkpoint) bool) (TurnResult, error) {
	lock := flock.New(filepath.Join(c.idx.Dir(), "hook.lock"))
	if ok, err := lock.TryLockContext(ctx, 10*time.Millisecond); err != nil || !ok {
		if err == nil {
			err = ErrBusy
		}
		return TurnResult{}, fmt.Errorf("controller: lock session %s: %w", c.session, err)
	}
	defer lock.Unlock()
	open, err := c.idx.OpenTurn(ctx)
	switch {
	case err == nil && enough(open):
		return TurnResult{}, nil
	case err != nil && !errors.Is(err, checkpoints.ErrNoOpenTurn):
		return TurnResult{}, err
	}
	return c.BeginTurn(ctx, prompt, TurnOptions{})
}

// maxTurnTries bounds how often BeginTurn reads the open turn's end
// states again because other processes kept changing it.
const maxTurnTries = 50

// turnEnds reads the open turn and the state its captured paths are in
// now: their end states, recorded when the next turn opens.
func (c *Controller) turnEnds(ctx context.Context) (checkpoints.Seen, []checkpoints.PathEnd, error) {
	prev, err := c.idx.OpenTurn(ctx)
	if err == nil {
		prev, err = c.idx.Turn(ctx, prev.Turn)
	}
	if errors.Is(err, checkpoints.ErrNoOpenTurn) {
		return checkpoints.SeenOf(nil), nil, nil
	}
	if err != nil {
		return checkpoints.Seen{}, nil, err
	}
	var ends []checkpoints.PathEnd
	for _, f := range prev.Files {
		pctx := ctx
		if f.Content != nil {
			pctx = cas.WithBase(ctx, *f.Content) // its end is most likely an edit of its start
		}
		st, err := c.cap.State(pctx, f.Path)
		if err != nil {
			continue // a symlink or unreadable file now: its end stays unknown
		}
		ends = append(ends, checkpoints.PathEnd{Path: f.Path, State: st})
	}
	return checkpoints.SeenOf(&prev), ends, nil
}

// CaptureOptions say what Capture records.
type CaptureOptions struct {
	// Paths are the paths to record: absolute or relative to the
	// workspace root.
	Paths []string
	// Step, when set, is the step to record into (as BeginStep returned
	// it; when its turn is no longer the open one, a turn opened since,
	// the open turn's latest step). Nil: the open turn's latest step, if
	// it has one.
	Step *Step
	// OpenStep, when set (and Step nil), is the step of a tool call to
	// record into: the open turn's step with its key, which the capture
	// opens (as BeginStep would) in the index transaction that records
	// the paths, or by itself when it has nothing to record. A tool
	// call's step and its captures then cost one index commit, not two.
	OpenStep *StepOptions
}

// Capture records the current state of each of o.Paths into the open turn,
// all of them as one durable step: one blob-store commit and one index
// commit (see capture.Capturer.CaptureAll). The first capture of a path in
// a turn (or in a step) wins, later ones record nothing (Recorded false).
// It returns one result and one error per path: errs[i] is nil when
// Paths[i] was captured or had been already, else an error wrapping
// ErrNoOpenTurn, ErrOutsideWorkspace, ErrVCSDir, ErrSymlink or
// ErrNotRegular, or the read error of a file it cannot read; a failed path
// records nothing and does not stop the others.
func (c *Controller) Capture(ctx context.Context, o CaptureOptions) (res []capture.Result, errs []error) {
	switch {
	case o.Step != nil:
		return c.cap.CaptureAllIn(ctx, checkpoints.StepRef{TurnID: o.Step.TurnID, Step: o.Step.Number}, o.Paths)
	case o.OpenStep != nil:
		return c.cap.CaptureAllIn(ctx, checkpoints.StepRef{Open: true, Key: o.OpenStep.Key, Tool: o.OpenStep.Tool}, o.Paths)
	}
	return c.cap.CaptureAll(ctx, o.Paths)
}

// AppendMessage appends a message to the open turn.
func (c *Controller) AppendMessage(ctx context.Context, role, text string) (Message, error) {
	return c.idx.AppendMessage(ctx, role, text)
}

// Pin exempts the active turn numbered turn from retention (or, with pin
// false, lets retention prune it again). A non-empty label names it; an
// empty one keeps the name it has.
func (c *Controller) Pin(ctx context.Context, turn int, pin bool, label string) error {
	err := c.idx.Pin(ctx, turn, pin, label)
	if errors.Is(err, checkpoints.ErrNotFound) {
		verb := "pin"
		if !pin {
			verb = "unpin"
		}
		return fmt.Errorf("controller: %s turn %d: %w", verb, turn, c.noTurn(ctx, turn))
	}
	return err
}

// Message is one message of the conversation: its id, turn, role, text
// and time.
type Message = checkpoints.Message

// Conversation returns the active conversation.
func (c *Controller) Conversation(ctx context.Context) ([]Message, error) {
	return c.idx.Conversation(ctx)
}

// withLock runs fn holding the session's op lock, which serialises rewinds,
// undos and crash recovery across processes.
func (c *Controller) withLock(ctx context.Context, fn func() error) error {
	if c.held {
		return fn()
	}
	return lockSession(ctx, c.lock, c.session, fn)
}
