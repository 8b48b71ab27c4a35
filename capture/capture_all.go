package capture

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// readers is how many paths CaptureAll reads at once: hashing and
// compressing are CPU work, and ckpt's machines have two cores.
const readers = 2

// CaptureAll is Capture for many paths as one durable step: the new blobs
// of all of them go into one blob-store commit, made durable before one
// index transaction records the snapshots that name them, so n paths cost
// two commits rather than 2n, and no fsync per path. errs[i] is nil when
// paths[i] was captured (or was already), else what Capture would have
// returned for it; a path that fails records nothing, and the others are
// still captured. Giving a path twice records it once (the first wins). It
// is safe for concurrent use.
//
// A crash between the two commits leaves only blobs no row names: the
// collector may sweep them, and nothing was recorded. The blob commit is
// fsynced (cas: synchronous=FULL); the index commit has the index's
// synchronous=NORMAL, so a power cut (not a process crash) can lose the
// last rows, though never keep a row whose blob is lost.
func (c *Capturer) CaptureAll(ctx context.Context, paths []string) ([]Result, []error) {
	return c.CaptureAllIn(ctx, checkpoints.StepRef{}, paths)
}

// CaptureAllIn is CaptureAll into the step ref names (see CaptureIn).
// With ref.Open it opens that step too, in the transaction that records
// the snapshots (checkpoints.AddStepSnapsAfter), or by itself when there
// is nothing to record; not when the lookup fails (no open turn).
func (c *Capturer) CaptureAllIn(ctx context.Context, ref checkpoints.StepRef, paths []string) ([]Result, []error) {
	if len(paths) == 0 {
		return []Result{}, []error{}
	}
	release, err := c.store.Hold(ctx) // the new blobs until their rows commit
	if err != nil {
		errs := make([]error, len(paths))
		for i := range errs {
			errs[i] = err
		}
		return make([]Result, len(paths)), errs
	}
	defer release()
	for try := 1; ; try++ {
		// A turn opened between the lookup and the step's opening: the
		// step goes into the turn open now, so look again.
		res, errs, moved := c.captureAll(ctx, ref, paths)
		if !moved || try == maxStepTries {
			return res, errs
		}
	}
}

// maxStepTries bounds how often CaptureAllIn looks again because turns
// kept opening while it captured.
const maxStepTries = 3

// captureAll is CaptureAllIn holding the blob store; moved says that a
// step to open (ref.Open) found a turn opened since the lookup and
// nothing was recorded.
func (c *Capturer) captureAll(ctx context.Context, ref checkpoints.StepRef, paths []string) (res []Result, errs []error, moved bool) {
	res = make([]Result, len(paths))
	batch := c.store.NewBatch()
	defer batch.Abort()
	rels, errs := c.ws.RelAll(paths)
	var todo []int // paths that resolved
	for i := range paths {
		if errs[i] == nil {
			todo = append(todo, i)
		}
	}
	// The open turn and step, and what they hold of these paths, read
	// once: every path of the call is recorded into the turn open when it
	// began.
	if len(todo) == 0 {
		c.openStep(ctx, ref, errs)
		return res, errs, false
	}
	q := make([]string, len(todo))
	for k, i := range todo {
		q[k] = rels[i]
	}
	cgs, err := c.idx.CapturingAllIn(ctx, q, ref)
	if err != nil {
		for _, i := range todo {
			errs[i] = fmt.Errorf("capture: %s: %w", rels[i], err)
		}
		return res, errs, false
	}
	turn := cgs[0].Turn
	read := make([]bool, len(paths)) // a new state was read: to record
	each(c.ws, len(todo), func(o *opener, k int) {
		i, cg := todo[k], cgs[k]
		res[i] = Result{Path: rels[i], Turn: turn.Turn, Step: cg.Step}
		if !cg.Needed() {
			res[i].Snap = *cg.Snap
			return
		}
		// The last content the session recorded for the path, which the
		// lookup read, is the blob store's hint for a delta.
		st, _, err := c.stateSeen(cas.WithBase(ctx, cg.Last), o, rels[i], batch.Put)
		if err != nil {
			errs[i] = err
			return
		}
		res[i].Snap = checkpoints.FileSnap{Path: rels[i], Content: st.Content, Mode: st.Mode, Size: st.Size, Dirs: st.Dirs, Step: cg.Step}
		read[i] = true
	})
	var pending []int
	for i := range paths {
		if read[i] {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		c.openStep(ctx, ref, errs)
		return res, errs, false
	}
	// The blob commit (an fsync) runs while the rows are inserted; the
	// index transaction commits only once the blobs are durable.
	committed := make(chan error, 1)
	goCommit(func() { committed <- batch.Commit(ctx) })
	var blobErr error
	var once sync.Once
	blobs := func() error {
		once.Do(func() {
			if blobErr = <-committed; c.blobsCommitted != nil {
				c.blobsCommitted()
			}
		})
		return blobErr
	}
	moved = c.record(ctx, cgs[0], ref, pending, res, errs, blobs)
	blobs() // the commit has returned before the hold is released
	return res, errs, moved
}

// record records the snapshots of res[pending[k]] into the turn of cg
// (the lookup of the first path) in one transaction that commits only if
// blobs (the commit of the blobs they name, which it waits for) succeeds,
// and says in res and errs what became of each. With ref.Open the
// transaction opens the step too; moved says it found a turn opened since
// the lookup (checkpoints.ErrStepMoved).
func (c *Capturer) record(ctx context.Context, cg checkpoints.Capturing, ref checkpoints.StepRef, pending []int, res []Result, errs []error, blobs func() error) (moved bool) {
	snaps := make([]checkpoints.FileSnap, len(pending))
	for k, i := range pending {
		snaps[k] = res[i].Snap
	}
	var added []bool
	var err error
	if ref.Open {
		var st checkpoints.Step
		if st, added, err = c.idx.AddStepSnapsAfter(ctx, cg, ref.Key, ref.Tool, snaps, blobs); err == nil {
			for i := range res {
				res[i].Step, res[i].Snap.Step = st.Number, st.Number
			}
		}
	} else {
		added, err = c.idx.AddSnapsAfter(ctx, cg.Turn.ID, snaps, blobs)
	}
	if err != nil {
		for _, i := range pending {
			errs[i] = fmt.Errorf("capture: %s: %w", res[i].Path, err)
		}
		return errors.Is(err, checkpoints.ErrStepMoved)
	}
	for k, i := range pending {
		res[i].Recorded = added[k]
	}
	return false
}

// openStep opens the step ref.Open names when a capture has nothing to
// record: a tool call is a step even when its paths are recorded
// already, or cannot be. A failure is each path's error that has none.
func (c *Capturer) openStep(ctx context.Context, ref checkpoints.StepRef, errs []error) {
	if !ref.Open {
		return
	}
	if _, _, err := c.idx.BeginStep(ctx, ref.Key, ref.Tool); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("capture: %w", err)
			}
		}
	}
}

// each calls fn(0..n-1) on up to readers goroutines, the calling one among
// them, each with an opener of ws of its own (consecutive paths of one
// directory are opened through it); one path is read on the calling
// goroutine. Each goroutine takes
// the next index until none is left, rather than one goroutine per path:
// a capture of 2,000 paths started and ended 2,000 goroutines, each
// growing its stack again to the depth of zstd's and SQLite's calls (a
// batch's early commit runs on the goroutine whose Put fills it), and
// every exit sent the scheduler looking for work to steal.
func each(ws *Workspace, n int, fn func(o *opener, i int)) {
	var next atomic.Int64
	work := func() {
		o := ws.opener()
		defer o.close()
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			fn(o, i)
		}
	}
	var wg sync.WaitGroup
	for range min(n, readers) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// commitWork hands a blob commit to a goroutine goCommit keeps.
var commitWork = make(chan func())

// committerIdle is how long a goroutine goCommit keeps waits for work.
const committerIdle = time.Minute

// goCommit runs fn on a goroutine of its own: one an earlier capture left
// waiting, when one is, else a new one. A new goroutine grows its stack to
// the depth of SQLite's calls on every capture, copying it each time it
// doubles; a kept one has grown it already (a resident hook server
// captures again and again). A goroutine with no work for committerIdle
// ends.
func goCommit(fn func()) {
	select {
	case commitWork <- fn:
	default:
		go committer(fn)
	}
}

func committer(fn func()) {
	idle := time.NewTimer(committerIdle)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(committerIdle)
		select {
		case fn = <-commitWork:
		case <-idle.C:
			return
		}
	}
}
