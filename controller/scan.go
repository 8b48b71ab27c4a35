package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/quote"
)

// setScan turns scan mode on or off for every turn of the session
// (SetMeta of scanKey).
func (c *Controller) setScan(ctx context.Context, value string) error {
	switch value {
	case "on":
		if err := c.scanAllowed(); err != nil {
			return err
		}
	case "off":
	default:
		return fmt.Errorf("controller: scan mode is on or off, not %q", value)
	}
	return c.idx.SetMeta(ctx, scanKey, value)
}

// scanSetting says whether the session is in scan mode: its own setting,
// else its workspace's default (Store.WorkspaceScan), else off; inherited
// says the workspace's default decided.
func (c *Controller) scanSetting(ctx context.Context) (on, inherited bool, err error) {
	v, err := c.idx.Meta(ctx, scanKey)
	if errors.Is(err, checkpoints.ErrNotFound) {
		def, err := c.st.WorkspaceScan(c.ws.Root(), "")
		return def == "on", def != "", err
	}
	return v == "on", false, err
}

func (c *Controller) scanOn(ctx context.Context, o TurnOptions) (on, inherited bool, err error) {
	if o.Scan {
		return true, false, nil
	}
	return c.scanSetting(ctx)
}

// scanAllowed refuses a home directory or a filesystem root.
func (c *Controller) scanAllowed() error { return scanAllowedAt(c.ws.Root()) }

// scanAllowedAt refuses a home directory or a filesystem root as root.
func scanAllowedAt(root string) error {
	if filepath.Dir(root) == root {
		return fmt.Errorf("controller: %s: %w", root, ErrScanRefused)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil && h == root {
			return fmt.Errorf("controller: %s: %w", root, ErrScanRefused)
		}
	}
	return nil
}

// scanForTurn takes the manifest for a turn about to open: every blob goes
// into one batch committed before the turn's row (the caller holds the
// store), and the stat cache is replaced. A refused or over-budget scan,
// or one the root's permissions stop, is a warning, not an error: the turn
// opens without a manifest. A workspace
// too big for the budget whose scan mode is its default (inherited) has
// the default turned off, so the next turns do not spend the budget again.
// progress, if not nil, is told how many files the scan has found; so is
// found (lowerGCForScan) when the scan is a first one.
func (c *Controller) scanForTurn(ctx context.Context, progress, found func(files int), inherited bool) (*capture.ScanResult, string, error) {
	if err := c.scanAllowed(); err != nil {
		return nil, err.Error() + "; this turn has no manifest, edit-tool captures still work", nil
	}
	sc, err := c.idx.LoadScanCache(ctx)
	if err != nil {
		return nil, "", err
	}
	if sc.Manifest.IsZero() { // a first scan: a lower heap limit (scangc.go)
		progress = alsoTell(progress, found)
	}
	batch := c.store.NewBatch()
	defer batch.Abort()
	so := c.scan
	so.Progress = progress
	res, err := c.cap.Scan(ctx, so, sc, batch.Put)
	if errors.Is(err, capture.ErrScanBudget) {
		if inherited {
			if _, serr := c.st.WorkspaceScan(c.ws.Root(), "off"); serr == nil {
				return nil, err.Error() + "; the workspace is too big to scan at every prompt, so its scan mode is now off: edit-tool captures only (`ckpt scan on` scans this session anyway)", nil
			}
		}
		return nil, err.Error() + "; this turn has no manifest, edit-tool captures still work", nil
	}
	if errors.Is(err, fs.ErrPermission) {
		// The root, or its ignore rules, unreadable (an entry below it is
		// skipped by the scan itself): no manifest, but the turn opens.
		return nil, err.Error() + "; this turn has no manifest, edit-tool captures still work", nil
	}
	if err != nil {
		return nil, "", err
	}
	if res.Read > 0 { // else nothing was put
		if err := batch.Commit(ctx); err != nil {
			return nil, "", err
		}
	}
	if !res.CacheUnchanged {
		if err := c.idx.SaveScanCache(ctx, sc, res.Stats, res.Dirs, &res.Manifest); err != nil {
			return nil, "", err
		}
	}
	res.Stats = nil // saved: the turn needs only the manifest (10 MiB less at 100,000 files)
	if res.Manifest.Since != nil {
		res.Manifest.Since.Prev = sc.Manifest // the manifest the cache came from
	}
	return &res, "", nil
}

// scanNow scans the workspace without storing anything (hashes only,
// through the stat cache), for rewinds and status.
func (c *Controller) scanNow(ctx context.Context) (capture.ScanResult, error) {
	cache, err := c.idx.LoadScanCache(ctx)
	if err != nil {
		return capture.ScanResult{}, err
	}
	return c.cap.Scan(ctx, c.scan, cache, capture.Hash)
}

// unscannable reports whether err is a scan stopped by the permissions of
// the root or of its ignore rules (an entry below is skipped by the scan
// itself): nothing is known of the workspace as a scan sees it now, which
// is no reason to fail a rewind, a revert or status. what names the entry
// ("" when the error does not).
func unscannable(err error) (what string, ok bool) {
	if !errors.Is(err, fs.ErrPermission) {
		return "", false
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && filepath.IsLocal(pe.Path) {
		what = filepath.ToSlash(pe.Path)
	}
	return what, true
}

// noScanNow keeps a code rewind's promise about what scans skip when no
// scan can run now (unscannable): every path whose earliest event is a
// scanned turn's manifest is dropped from ev and returned as skipped, as
// if the scan skipped everything; what a capture or an op recorded is
// still restored, and nothing is deleted for a manifest's lack of it.
func noScanNow(ev map[string]checkpoints.Event, scanned []checkpoints.ScannedTurn, what string) []Skip {
	why := "unreadable: no scan can run now"
	if what != "" {
		why = quote.Path(what) + " is " + why
	}
	atScan := make(map[int64]bool, len(scanned))
	for _, st := range scanned {
		atScan[st.Seq] = true
	}
	var out []Skip
	for p, e := range ev {
		if atScan[e.Seq] {
			delete(ev, p)
			out = append(out, Skip{Path: p, Reason: why + ", and a scan rewind never touches what only a scan recorded"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// absentSince marks as "absent" the files a scan finds now, and the paths
// a later event would restore as files, that the index proves did not
// exist at some scanned turn's start before any other event of theirs: a
// turn opened at or after the rewind's target whose manifest lacks them.
// Files the scan now ignores or skips, files under a path that
// turn's scan skipped, and every file when the ignore files (.gitignore,
// .ckptignore) then and now differ (the manifest cannot tell "absent" from
// "ignored" then), are left alone. Nothing else is ever deleted. now is a
// scan of the workspace as it is.
func (c *Controller) absentSince(ctx context.Context, ev map[string]checkpoints.Event, scanned []checkpoints.ScannedTurn, now *capture.ScanResult) error {
	var err error
	nowRules := ignoreFiles(&now.Manifest)
	// The candidates: files there now (the scan found them, so the rules
	// let them through), and paths a later event would restore as files,
	// when the rules let them through and no regular file is there now (one
	// the scan did not list is oversized or ignored: left alone).
	open := make(map[string]bool, len(now.Manifest.Files))
	for _, f := range now.Manifest.Files {
		open[f.Path] = true
	}
	rules := c.scan.Ignore
	if rules == nil {
		rules = c.ws.Ignore()
	}
	for p, e := range ev {
		if open[p] || !e.State.Exists() {
			continue
		}
		if ign, err := rules.Match(p, false); err != nil || ign {
			continue
		}
		if en, err := c.ws.Inspect(p); err != nil || en.Kind == capture.Regular {
			continue
		}
		open[p] = true
	}
	// Oldest scanned turn first; a candidate is decided by the first one
	// that is not later than its earliest event, so most need only the
	// first manifest, and one manifest is in memory at a time.
	var m *checkpoints.Manifest
	var mid int64
	for _, st := range scanned {
		if len(open) == 0 {
			break
		}
		if m == nil || st.ManifestID != mid {
			if m, err = c.idx.ManifestByID(ctx, st.ManifestID); err != nil {
				return err
			}
			mid = st.ManifestID
		}
		has := make(map[string]bool, len(m.Files))
		for _, f := range m.Files {
			has[f.Path] = true
		}
		skipped := make([]string, len(m.Skips))
		for i, sk := range m.Skips {
			skipped[i] = sk.Path
		}
		usable := maps.Equal(ignoreFiles(m), nowRules) && !rulesSkipped(m.Skips) && !rulesSkipped(now.Manifest.Skips)
		for p := range open {
			if e, ok := ev[p]; ok && e.Seq <= st.Seq || has[p] {
				delete(open, p) // an earlier event decides
				continue
			}
			if !usable || underAny(p, skipped) {
				continue // not proven here; a later manifest may
			}
			ev[p] = checkpoints.Event{Seq: st.Seq} // did not exist when that turn opened
			delete(open, p)
		}
	}
	return nil
}

// overLimit keeps a code rewind's promise about what scans skip: a path
// the scan now skips (a file over the size limit, anything in a directory
// over the entry limit) is never touched by what manifests recorded. It
// drops from ev every path at or under such a skip whose earliest event
// is a scanned turn's manifest (a capture or an op is a record of its
// own, and is restored), and returns a Skip for each, and one for each
// other skip the first scanned turn since the target did not have (files
// may have been created there since, which the rewind cannot see to
// delete).
func (c *Controller) overLimit(ctx context.Context, ev map[string]checkpoints.Event, scanned []checkpoints.ScannedTurn, now *checkpoints.Manifest) ([]Skip, error) {
	if len(now.Skips) == 0 {
		return nil, nil
	}
	atScan := make(map[int64]bool, len(scanned))
	for _, st := range scanned {
		atScan[st.Seq] = true
	}
	first, err := c.idx.ManifestByID(ctx, scanned[0].ManifestID)
	if err != nil {
		return nil, err
	}
	skippedThen := make([]string, len(first.Skips))
	for i, sk := range first.Skips {
		skippedThen[i] = sk.Path
	}
	var out []Skip
	for _, sk := range now.Skips {
		reported := false // sk.Path itself is restored or skipped
		dir := c.ws.IsDir(sk.Path)
		for p, e := range ev {
			if p != sk.Path && !(dir && strings.HasPrefix(p, sk.Path+"/")) {
				continue
			}
			reported = reported || p == sk.Path
			if !atScan[e.Seq] {
				continue
			}
			delete(ev, p)
			reason := sk.Reason + ": a scan rewind never touches it"
			if p != sk.Path {
				reason = fmt.Sprintf("in %s, %s: a scan rewind never touches it", sk.Path, sk.Reason)
			}
			out = append(out, Skip{Path: p, Reason: reason, holds: dir && p == sk.Path})
		}
		if !reported && !underAny(sk.Path, skippedThen) {
			out = append(out, Skip{Path: sk.Path, Reason: sk.Reason + ": skipped by the scan now and not at the target, so what was created there since is not deleted, nor anything in it restored", holds: dir})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ignoreFiles returns the ignore files a manifest holds, by path.
func ignoreFiles(m *checkpoints.Manifest) map[string]cas.ID {
	out := map[string]cas.ID{}
	for _, f := range m.Files {
		if isIgnoreFile(f.Path) {
			out[f.Path] = f.Blob
		}
	}
	return out
}

// rulesSkipped reports whether a scan skipped an ignore file (over the
// size limit): its manifest then cannot say which rules it applied.
func rulesSkipped(skips []checkpoints.ScanSkip) bool {
	return slices.ContainsFunc(skips, func(sk checkpoints.ScanSkip) bool { return isIgnoreFile(sk.Path) })
}

// isIgnoreFile reports whether p is a file of ignore rules a scan reads.
func isIgnoreFile(p string) bool {
	b := path.Base(p)
	return b == ".gitignore" || b == ".ckptignore"
}

// underAny reports whether p is one of dirs or lies under one of them.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// Change is one difference between the open turn's start and now.
type Change struct {
	Path string `json:"path"`
	// Kind is "added", "modified", "deleted", "type_changed": the path
	// is no longer a file or absent (Now says what it is), so a rewind
	// cannot write it, or "unreadable": ckpt may not read it now (another
	// user's, mode 000), so whether it changed is not known and a rewind
	// leaves it as it is.
	Kind string `json:"kind"`
	// Now, for a type change: "directory", "symlink" or "special file"
	// (of the path, or of a parent directory that is not one).
	Now string `json:"now,omitempty"`
}

// typeNow says what is at p when its state cannot be read: "directory",
// "symlink" or "special file" (of p or of a parent in the way); absent
// when a parent is a regular file (nothing can be at p); neither when p
// cannot be looked at.
func (c *Controller) typeNow(p string) (now string, absent bool) {
	if _, e, ok := c.ws.Blocker(p); ok {
		switch {
		case e.Kind == capture.Regular:
			return "", true
		case errors.Is(e.Reason, capture.ErrSymlink):
			return "symlink", false
		}
		return "special file", false
	}
	e, err := c.ws.Inspect(p)
	switch {
	case err != nil || e.Kind != capture.Unsafe:
		return "", false
	case errors.Is(e.Reason, capture.ErrSymlink):
		return "symlink", false
	case c.ws.IsDir(p):
		return "directory", false
	}
	return "special file", false
}

// Status returns what changed in the workspace since the open turn
// started: for a scanned turn every file its manifest and a fresh scan
// disagree on; otherwise the files captured in the turn. A recorded path
// that is now a directory, a symlink or a special file is a type change;
// one ckpt may not read now, and in a scanned turn every file or
// directory the scan may not open, is "unreadable".
func (c *Controller) Status(ctx context.Context) ([]Change, error) {
	open, err := c.idx.OpenTurn(ctx)
	if err != nil {
		return nil, err
	}
	cp, err := c.idx.Turn(ctx, open.Turn)
	if err != nil {
		return nil, err
	}
	start, now, unreadableNow, err := c.statusStates(ctx, cp)
	if err != nil {
		return nil, err
	}
	out := c.statusCompare(ctx, start, now)
	for p := range now {
		if _, ok := start[p]; !ok {
			out = append(out, Change{Path: p, Kind: "added"})
		}
	}
	for _, s := range unreadableNow {
		if _, ok := start[s]; !ok {
			out = append(out, Change{Path: s, Kind: "unreadable"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// statusStates is what Status compares for the open turn cp: each
// recorded path's state when the turn started (its manifest's, else its
// first capture's), for a scanned turn the workspace's states now (nil
// when no scan is possible: each recorded file is then looked at on its
// own), and the files and directories a scan now may not open.
func (c *Controller) statusStates(ctx context.Context, cp checkpoints.Checkpoint) (start, now map[string]checkpoints.State, unreadableNow []string, err error) {
	start = map[string]checkpoints.State{}
	m, err := c.idx.Manifest(ctx, cp.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if m != nil {
		for _, f := range m.Files {
			id := f.Blob
			start[f.Path] = checkpoints.State{Content: &id, Mode: f.Mode, Size: f.Size}
		}
		sr, err := c.scanNow(ctx)
		if what, ok := unscannable(err); ok {
			// Each recorded file compared on its own; files added since
			// cannot be seen.
			if what != "" {
				unreadableNow = append(unreadableNow, what)
			}
		} else if err != nil {
			return nil, nil, nil, err
		}
		if err == nil {
			now = map[string]checkpoints.State{}
		}
		for _, f := range sr.Manifest.Files {
			id := f.Blob
			now[f.Path] = checkpoints.State{Content: &id, Mode: f.Mode, Size: f.Size}
		}
		for _, s := range sr.Manifest.Skips {
			if capture.SkippedUnreadable(s.Reason) {
				unreadableNow = append(unreadableNow, s.Path)
			}
		}
	}
	for _, f := range cp.Files {
		if _, ok := start[f.Path]; !ok {
			start[f.Path] = f.State()
		}
	}
	return start, now, unreadableNow, nil
}

// statusCompare is the change of each path of start, against now (a
// scan's states) or, for a path it does not hold, the file itself.
func (c *Controller) statusCompare(ctx context.Context, start, now map[string]checkpoints.State) []Change {
	current := func(p string) (checkpoints.State, error) {
		if now != nil {
			if st, ok := now[p]; ok {
				return st, nil
			}
		}
		return c.cap.StateWith(ctx, p, capture.Hash)
	}
	var out []Change
	for p, was := range start {
		is, err := current(p)
		if errors.Is(err, fs.ErrPermission) {
			// Another user's now, or mode 000: whether it changed is
			// not known, and not "deleted".
			out = append(out, Change{Path: p, Kind: "unreadable"})
			continue
		}
		if err != nil {
			now, absent := c.typeNow(p)
			if now != "" {
				out = append(out, Change{Path: p, Kind: "type_changed", Now: now})
			}
			if !absent {
				continue // a type change, or unreadable: not ours to judge
			}
		}
		switch {
		case was.Exists() && !is.Exists():
			out = append(out, Change{Path: p, Kind: "deleted"})
		case !was.Exists() && is.Exists():
			out = append(out, Change{Path: p, Kind: "added"})
		case !was.Equal(is):
			out = append(out, Change{Path: p, Kind: "modified"})
		}
	}
	return out
}

// scanChange is a path whose state two manifests disagree on: what a
// scanned turn's shell (or its edit tools) changed, seen from the manifest
// the turn opened with and the one that recorded how it ended.
type scanChange struct {
	Path       string
	Start, End checkpoints.State
}

// manifestChanges keeps of the paths two manifests disagree on (diff)
// those ckpt can vouch for, with their states then and now. A path under
// what either scan skipped (skips: an oversized file, a directory over the
// entry limit) is left out: neither manifest can say what it held. So is a
// path only one of them lists when their ignore files differ, or one was
// skipped (it may have been ignored by the other), unless it is an ignore
// file itself.
func manifestChanges(diff []checkpoints.ManifestDiff, skips []checkpoints.ScanSkip) []scanChange {
	skipped := make([]string, len(skips))
	for i, sk := range skips {
		skipped[i] = sk.Path
	}
	sameRules := !rulesSkipped(skips)
	for _, d := range diff {
		if isIgnoreFile(d.Path) && (d.From == nil || d.To == nil || d.From.Blob != d.To.Blob) {
			sameRules = false
		}
	}
	state := func(e *checkpoints.ManifestEntry) checkpoints.State {
		if e == nil {
			return checkpoints.State{}
		}
		id := e.Blob
		return checkpoints.State{Content: &id, Mode: e.Mode, Size: e.Size}
	}
	var out []scanChange
	for _, d := range diff {
		if underAny(d.Path, skipped) || (d.From == nil || d.To == nil) && !sameRules && !isIgnoreFile(d.Path) {
			continue
		}
		out = append(out, scanChange{Path: d.Path, Start: state(d.From), End: state(d.To)})
	}
	return out
}

// turnScanChanges returns what scanned turn cp changed as its manifests
// recorded it (read whole, their hashes checked: a revert deletes what
// the turn's manifest lacks): against the next turn's manifest, or, for
// the open turn, against a scan of the workspace now. It returns nothing
// for a turn that was not scanned, or whose next turn was not.
func (c *Controller) turnScanChanges(ctx context.Context, cp checkpoints.Checkpoint) ([]scanChange, error) {
	if !cp.Scanned {
		return nil, nil
	}
	start, end, err := c.idx.TurnEnds(ctx, cp.ID)
	if err != nil || start == nil {
		return nil, err
	}
	if end == nil {
		if open, err := c.idx.OpenTurn(ctx); err != nil || open.ID != cp.ID {
			return nil, err // a later turn, not scanned, ended it
		}
		sr, err := c.scanNow(ctx)
		if _, ok := unscannable(err); ok {
			return nil, nil // what the shell changed cannot be seen: left out, as what a scan skips
		}
		if err != nil {
			return nil, err
		}
		end = &sr.Manifest
	}
	return manifestChanges(checkpoints.DiffManifests(start, end), append(slices.Clone(start.Skips), end.Skips...)), nil
}

// withScanChanges adds to a listed turn the files its manifests say it
// changed and it did not capture: a shell's work in a scanned turn (the
// open turn's shows in Status). Files stay sorted by path.
func (c *Controller) withScanChanges(ctx context.Context, cp *checkpoints.Checkpoint) error {
	if !cp.Scanned {
		return nil
	}
	d, ended, err := c.idx.TurnDiff(ctx, cp.ID)
	if err != nil || !ended {
		return err
	}
	changes := manifestChanges(d.Files, append(d.FromSkips, d.ToSkips...))
	if len(changes) == 0 {
		return nil
	}
	captured := make(map[string]bool, len(cp.Files))
	for _, f := range cp.Files {
		captured[f.Path] = true
	}
	files := slices.Clone(cp.Files)
	for _, ch := range changes {
		if captured[ch.Path] {
			continue
		}
		end := ch.End
		files = append(files, checkpoints.FileSnap{Path: ch.Path, Content: ch.Start.Content, Mode: ch.Start.Mode, Size: ch.Start.Size, End: &end})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	cp.Files = files
	return nil
}
