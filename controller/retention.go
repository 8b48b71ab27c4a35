package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/retention"
	"github.com/gofrs/flock"
)

// Automatic retention: at most once a day, at Open, and whenever a new turn
// finds the store over its quota.
const (
	autoEvery  = 24 * time.Hour
	autoBudget = 2 * time.Second  // the daily sweep
	quotaLimit = 30 * time.Second // enforcing a quota that is exceeded
)

// policy returns the store's retention policy (config.json, or defaults)
// and whether automatic retention is on.
func (s *Store) policy() (retention.Policy, bool, error) { return retention.LoadConfig(s.dir) }

// plan evaluates the policy on the store as it is now, changing nothing.
func (s *Store) plan(ctx context.Context, p retention.Policy) (retention.Plan, error) {
	blobs, err := s.disk(ctx, false)
	if err != nil {
		return retention.Plan{}, err
	}
	return retention.PlanFor(ctx, s.dir, blobs, p, s.now())
}

// RetainOptions say how Retain applies the store's retention policy: the
// one its config.json sets (package retention's defaults without one),
// with the fields set here on top.
type RetainOptions struct {
	// MaxAge, KeepTurns, MaxBytes and Grace override the store's policy
	// as config.json spells them ("30d", "500MB", "0" for no limit);
	// those left empty (nil) keep it. A value that does not parse is an
	// error naming the config key.
	MaxAge, MaxBytes, Grace string
	KeepTurns               *int
	// Session, when set, limits pruning to that session's turns: no other
	// session's turn is pruned and no session is removed.
	Session string
	// CollectOnly skips the policy's pruning and removals: Retain only
	// collects the blobs no session references (sparing those younger
	// than the policy's Grace), and returns a zero Plan.
	CollectOnly bool
	// AllowEmpty lets collection delete every blob when the store has no
	// session left (CollectOnly; a policy's own removals allow it anyway).
	AllowEmpty bool
	// Progress, if set, is called with the count of blobs collection has
	// scanned, for a progress display.
	Progress func(done int)
	// DryRun only evaluates the policy on the store as it is now: Retain
	// returns the Plan, changes nothing and collects nothing (a zero
	// GCReport). Collection has no dry run: with CollectOnly it is an
	// error.
	DryRun bool
}

// Retain applies the store's retention policy (with o's overrides) now:
// it prunes and removes what the policy says across all sessions, then
// collects the blobs no session references any more (see retention.Collect:
// one whose index cannot be read stops it). With o.CollectOnly it only
// collects; with o.DryRun it only says what the policy would do.
func (s *Store) Retain(ctx context.Context, o RetainOptions) (retention.Plan, retention.GCReport, error) {
	p, _, err := s.policy()
	if err != nil {
		return retention.Plan{}, retention.GCReport{}, err
	}
	if p, err = (retention.Config{MaxAge: o.MaxAge, KeepTurns: o.KeepTurns, MaxBytes: o.MaxBytes, Grace: o.Grace}).Apply(p); err != nil {
		return retention.Plan{}, retention.GCReport{}, err
	}
	p.Session = o.Session
	if o.CollectOnly && o.DryRun {
		return retention.Plan{}, retention.GCReport{}, errors.New("controller: collection has no dry run")
	}
	if o.CollectOnly {
		rep, err := s.collect(ctx, retention.CollectOptions{Grace: p.Grace, AllowEmpty: o.AllowEmpty, Progress: o.Progress})
		return retention.Plan{}, rep, err
	}
	return s.retain(ctx, p, o.DryRun, o.Progress)
}

// retain applies policy p: Retain's work once the policy is settled, and
// automatic retention's. Under a quota, what pruning frees is an estimate
// (retention.PlanFor); when the store is still over it after collection,
// retain plans again on the compacted store and prunes more, a few rounds
// at most, each aiming lower by what the last left the store over. The
// Plan returned covers every round.
func (s *Store) retain(ctx context.Context, p retention.Policy, dryRun bool, progress func(int)) (retention.Plan, retention.GCReport, error) {
	plan, err := s.plan(ctx, p)
	if err != nil || dryRun {
		return plan, retention.GCReport{}, err
	}
	var rep retention.GCReport
	for round := 1; ; round++ {
		r, err := s.applyPlan(ctx, p, plan, progress)
		rep = addReports(rep, r, round == 1)
		if err != nil || p.MaxBytes <= 0 {
			return plan, rep, err
		}
		u, err := retention.DiskUsage(s.dir)
		if err != nil {
			return plan, rep, err
		}
		// What the store takes now, measured, says whether it is over.
		plan.OverQuota = u.Total > p.MaxBytes
		if !plan.OverQuota || round == quotaRounds {
			return plan, rep, nil
		}
		// The estimate fell short by what the store is still over: the
		// next round aims that much lower.
		p.Reserve += u.Total - p.MaxBytes
		next, err := s.plan(ctx, p)
		if err != nil || len(next.Removes()) == 0 && len(next.Prunes()) == 0 {
			return plan, rep, err
		}
		plan = mergePlans(plan, next)
	}
}

// quotaRounds bounds the rounds of planning and pruning Retain makes to
// bring a store under its quota.
const quotaRounds = 4

// applyPlan carries out one plan and collects what it left unreferenced.
func (s *Store) applyPlan(ctx context.Context, p retention.Policy, plan retention.Plan, progress func(int)) (retention.GCReport, error) {
	if err := retention.Apply(ctx, s.dir, plan); err != nil {
		return retention.GCReport{}, err
	}
	// Removing the last session, or pruning the last turns that held
	// snapshots, on purpose may leave nothing referenced: the sessions
	// were read, so an empty live set is what the plan meant.
	return s.collect(ctx, retention.CollectOptions{Grace: p.Grace, AllowEmpty: len(plan.Removes()) > 0 || len(plan.Prunes()) > 0, Progress: progress})
}

// mergePlans is what two rounds of Retain decided: the first's prunes and
// removals, then the second's decisions on what the first kept.
func mergePlans(first, next retention.Plan) retention.Plan {
	out := next
	out.StoreBytes = first.StoreBytes
	out.FreedBytes = first.FreedBytes + next.FreedBytes
	out.Turns, out.Sessions = nil, nil
	for _, d := range first.Turns {
		if d.Action == "prune" {
			out.Turns = append(out.Turns, d)
		}
	}
	out.Turns = append(out.Turns, next.Turns...)
	for _, d := range first.Sessions {
		if d.Action == "remove" {
			out.Sessions = append(out.Sessions, d)
		}
	}
	out.Sessions = append(out.Sessions, next.Sessions...)
	return out
}

// addReports adds a later collection's report to the earlier ones': what
// was scanned is the first's count, what is live the last's.
func addReports(sum, r retention.GCReport, first bool) retention.GCReport {
	if first {
		return r
	}
	sum.Live = r.Live
	sum.Deleted += r.Deleted
	sum.FreedBytes += r.FreedBytes
	sum.Spared += r.Spared
	sum.Repacked += r.Repacked
	sum.RepackSaved += r.RepackSaved
	return sum
}

// collect deletes every blob no session references (see retention.Collect).
func (s *Store) collect(ctx context.Context, o retention.CollectOptions) (retention.GCReport, error) {
	blobs, err := s.disk(ctx, false)
	if err != nil {
		return retention.GCReport{}, err
	}
	return retention.Collect(ctx, s.dir, blobs, o)
}

// Verify checks every referenced blob (see retention.Verify).
func (s *Store) Verify(ctx context.Context, repair bool, before func(retention.Finding), progress func(done, total int)) (retention.VerifyReport, error) {
	blobs, err := s.disk(ctx, false)
	if err != nil {
		return retention.VerifyReport{}, err
	}
	return retention.Verify(ctx, s.dir, blobs, repair, before, progress)
}

// RemoveSession removes session id whole: its turns, conversation and undo
// records, then collects the blobs only it referenced. It refuses a session
// with pinned turns, or one whose index cannot be read, unless force is set
// (see retention.RemoveSession for the errors); with dryRun it changes
// nothing and says what it would remove. The GCReport is zero when nothing
// was removed.
func (s *Store) RemoveSession(ctx context.Context, id string, force, dryRun bool) (retention.Removal, retention.GCReport, error) {
	r, err := retention.RemoveSession(ctx, s.dir, id, force, dryRun)
	if err != nil || !r.Removed {
		return r, retention.GCReport{}, err
	}
	p, _, err := s.policy()
	if err != nil {
		return r, retention.GCReport{}, err
	}
	// Removing the last session on purpose may leave nothing referenced.
	rep, err := s.collect(ctx, retention.CollectOptions{Grace: p.Grace, AllowEmpty: true})
	return r, rep, err
}

// SessionInfo describes one session of the store.
type SessionInfo struct {
	ID        string
	Workspace string
	Turns     int // in the active history
	// Bytes is what the blobs only this session references take in the
	// store: what removing it would free. A fork shares its parent's
	// blobs, so it holds little of its own. Sessions of one workspace
	// leave it and SharedBytes zero.
	Bytes int64
	// SharedBytes is what the blobs it shares with other sessions take.
	SharedBytes int64
	LastUse     time.Time
	// Parent is the session this one was forked from (its parent in the
	// session tree), "" for a session that is not a fork, and ParentTurn
	// the turn it was forked before. The parent may have been removed
	// since.
	Parent     string
	ParentTurn int
	// Error says why the session's index could not be read; the other
	// fields but ID are then zero. Empty when it was read.
	Error string
}

// sessionInfo is what the catalog's summary of a readable session says.
func sessionInfo(sum checkpoints.Summary) SessionInfo {
	return SessionInfo{ID: sum.ID, Workspace: sum.Workspace, Turns: sum.Active(), LastUse: sum.LastUse, Parent: sum.Origin.Session, ParentTurn: sum.Origin.Turn}
}

// Sessions lists the store's sessions.
//
// With workspace "" it lists every one, sorted by id, with what each holds
// in the blob store (Bytes, SharedBytes). A session whose index cannot be
// read (missing, empty, corrupt) is listed with its Error and does not
// hide the others; its blobs count as nobody's, so the sizes of the others
// may count as their own what it also references.
//
// With a workspace root (absolute, symlinks resolved, as WorkspaceRoot
// gives it) it lists the sessions created for that workspace, most
// recently used first, for a front-end choosing among them: their sizes
// are not computed (no blob is read), and sessions whose index cannot be
// read are left out. A store directory that does not exist then has none,
// and is not created.
//
// What each index holds comes from the store's catalog (see
// checkpoints.Catalog), which opens only the indexes that changed since it
// last read them.
func (s *Store) Sessions(ctx context.Context, workspace string) ([]SessionInfo, error) {
	if workspace != "" {
		return s.workspaceSessions(ctx, workspace)
	}
	blobs, err := s.disk(ctx, false)
	if err != nil {
		return nil, err
	}
	sizes, err := retention.BlobSizes(ctx, blobs)
	if err != nil {
		return nil, err
	}
	ss, err := retention.Summaries(ctx, s.dir)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(ss))
	holders := map[cas.ID]int{} // sessions referencing each blob
	for _, sum := range ss {
		if sum.Err != nil {
			out = append(out, SessionInfo{ID: sum.ID, Error: strings.TrimPrefix(sum.Err.Error(), "checkpoints: ")})
			continue
		}
		for _, b := range sum.Refs {
			holders[b]++
		}
		out = append(out, sessionInfo(sum))
	}
	for n, sum := range ss {
		for _, b := range sum.Refs {
			if holders[b] > 1 {
				out[n].SharedBytes += sizes[b]
			} else {
				out[n].Bytes += sizes[b]
			}
		}
	}
	return out, nil
}

// autoRetain runs the daily sweep if it is due and no other process is
// running it, within a small time budget. Its errors are not the caller's:
// they go to the logger, and the next run, or `ckpt gc`, reports them.
func (s *Store) autoRetain(ctx context.Context, inUse string) {
	p, auto, err := s.policy()
	if err != nil {
		s.log.Warn("controller: automatic retention: read policy", "store", s.dir, "err", err)
		return
	}
	if !auto {
		return
	}
	if fi, err := os.Stat(s.stamp()); err == nil && s.now().Sub(fi.ModTime()) < autoEvery {
		return
	}
	p.InUse = inUse
	s.retainOnce(ctx, p, autoBudget)
}

// enforceQuota runs retention when the store takes more than the policy's
// quota on disk (every file of the store, as du counts it). One walk of the
// store directory: a few milliseconds for thousands of sessions.
func (s *Store) enforceQuota(ctx context.Context, inUse string) {
	p, auto, err := s.policy()
	if err != nil {
		s.log.Warn("controller: quota: read policy", "store", s.dir, "err", err)
		return
	}
	if !auto || p.MaxBytes <= 0 {
		return
	}
	u, err := retention.DiskUsage(s.dir)
	if err != nil {
		s.log.Warn("controller: quota: measure the store", "store", s.dir, "err", err)
		return
	}
	if u.Total <= p.MaxBytes {
		return
	}
	// A store retention could not bring under the quota (pinned turns,
	// session indexes) is tried again only once it has grown by 1/64 of
	// the quota since: not at every turn, which would cost each turn a
	// pass over every session.
	if b, err := os.ReadFile(s.overStamp()); err == nil {
		if last, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && u.Total >= last && u.Total <= last+p.MaxBytes/64 {
			return
		}
	}
	p.InUse = inUse
	if s.retainOnce(ctx, p, quotaLimit) {
		if after, err := retention.DiskUsage(s.dir); err == nil && after.Total > p.MaxBytes {
			s.log.Warn("controller: quota: retention could not bring the store under its quota", "store", s.dir, "bytes", after.Total, "quota", p.MaxBytes)
			atomicfile.WriteFile(s.overStamp(), []byte(strconv.FormatInt(after.Total, 10)), 0o600)
		} else {
			os.Remove(s.overStamp())
		}
	}
}

// overStamp holds the bytes on disk a quota enforcement left the store at
// when it could not get it under the quota.
func (s *Store) overStamp() string { return filepath.Join(s.dir, "quota.over") }

func (s *Store) stamp() string { return filepath.Join(s.dir, "retention.stamp") }

// retainOnce runs Retain if it can take the store's retention lock at once
// (one process at a time; the others go on without waiting), then touches
// the stamp. It reports whether Retain ran to the end.
func (s *Store) retainOnce(ctx context.Context, p retention.Policy, budget time.Duration) bool {
	lock := flock.New(filepath.Join(s.dir, "retention.lock"))
	if ok, err := lock.TryLock(); err != nil || !ok {
		if err != nil {
			s.log.Warn("controller: automatic retention: lock", "store", s.dir, "err", err)
		}
		return false
	}
	defer lock.Unlock()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	_, _, err := s.retain(ctx, p, false, nil)
	if err != nil {
		s.log.Warn("controller: automatic retention", "store", s.dir, "err", err)
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		now := s.now()
		if os.Chtimes(s.stamp(), now, now) != nil {
			atomicfile.WriteFile(s.stamp(), nil, 0o600)
		}
	}
	return err == nil
}
