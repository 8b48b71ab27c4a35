package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
)

// ErrScanRefused is wrapped when scan mode is asked for in a home directory
// or a filesystem root: a manifest of either would be huge and hold files
// that are not the project's.
var ErrScanRefused = errors.New("scan mode refused: the workspace is a home directory or a filesystem root")

// ScanOptions tune scans (limits, budget); the zero value takes capture's
// defaults. Tests and benchmarks set it.
var ScanOptions capture.ScanOptions

// SetScan turns scan mode on or off for every turn of the session.
func (c *Controller) SetScan(ctx context.Context, on bool) error {
	if on {
		if err := c.scanAllowed(); err != nil {
			return err
		}
	}
	v := "off"
	if on {
		v = "on"
	}
	return c.idx.SetMeta(ctx, "scan", v)
}

// ScanSetting reports whether the session is in scan mode.
func (c *Controller) ScanSetting(ctx context.Context) (bool, error) {
	v, err := c.idx.Meta(ctx, "scan")
	if errors.Is(err, checkpoints.ErrNotFound) {
		return false, nil
	}
	return v == "on", err
}

func (c *Controller) scanOn(ctx context.Context, o TurnOptions) (bool, error) {
	if o.Scan {
		return true, nil
	}
	return c.ScanSetting(ctx)
}

// scanAllowed refuses a home directory or a filesystem root.
func (c *Controller) scanAllowed() error {
	root := c.ws.Root()
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
// store), and the stat cache is replaced. A refused or over-budget scan is
// a warning, not an error: the turn opens without a manifest.
func (c *Controller) scanForTurn(ctx context.Context) (*capture.ScanResult, string, error) {
	if err := c.scanAllowed(); err != nil {
		return nil, err.Error() + "; this turn has no manifest, edit-tool captures still work", nil
	}
	cache, err := c.idx.StatCache(ctx)
	if err != nil {
		return nil, "", err
	}
	batch := c.store.NewBatch()
	defer batch.Abort()
	res, err := c.cap.Scan(ctx, ScanOptions, cache, batch.Put)
	if errors.Is(err, capture.ErrScanBudget) {
		return nil, err.Error() + "; this turn has no manifest, edit-tool captures still work", nil
	}
	if err != nil {
		return nil, "", err
	}
	if err := batch.Commit(ctx); err != nil {
		return nil, "", err
	}
	if err := c.idx.UpdateStatCache(ctx, cache, res.Stats); err != nil {
		return nil, "", err
	}
	return &res, "", nil
}

// scanNow scans the workspace without storing anything (hashes only,
// through the stat cache), for rewinds and status.
func (c *Controller) scanNow(ctx context.Context) (capture.ScanResult, error) {
	cache, err := c.idx.StatCache(ctx)
	if err != nil {
		return capture.ScanResult{}, err
	}
	return c.cap.Scan(ctx, ScanOptions, cache, capture.Hash)
}

// createdSince adds to targets, as "absent", every file a scan finds now
// that turn's manifest did not have: files created since the turn opened.
// Files under a path the turn's scan skipped, and files the scan now
// ignores or skips, are left alone. Nothing else is ever deleted.
func (c *Controller) createdSince(ctx context.Context, cp checkpoints.Checkpoint, targets map[string]checkpoints.State) error {
	m, err := c.idx.Manifest(ctx, cp.ID)
	if err != nil || m == nil {
		return err
	}
	now, err := c.scanNow(ctx)
	if err != nil {
		return fmt.Errorf("scan for files created since turn %d: %w", cp.Turn, err)
	}
	had := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		had[f.Path] = true
	}
	skipped := make([]string, len(m.Skips))
	for i, s := range m.Skips {
		skipped[i] = s.Path
	}
	sort.Strings(skipped)
	for _, f := range now.Manifest.Files {
		if had[f.Path] || underAny(f.Path, skipped) {
			continue
		}
		// It did not exist when the turn opened, whatever a later event
		// says: the earliest event since may be a rewind or undo that
		// rewrote a file the shell had created after the turn opened, whose
		// before-state is that file, not the turn's start.
		targets[f.Path] = checkpoints.State{}
	}
	return nil
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
	Kind string `json:"kind"` // "added", "modified" or "deleted"
}

// Status returns what changed in the workspace since the open turn
// started: for a scanned turn every file its manifest and a fresh scan
// disagree on; otherwise the files captured in the turn.
func (c *Controller) Status(ctx context.Context) ([]Change, error) {
	open, err := c.idx.OpenTurn(ctx)
	if err != nil {
		return nil, err
	}
	cp, err := c.idx.Turn(ctx, open.Turn)
	if err != nil {
		return nil, err
	}
	start := map[string]checkpoints.State{}
	m, err := c.idx.Manifest(ctx, cp.ID)
	if err != nil {
		return nil, err
	}
	var now map[string]checkpoints.State
	if m != nil {
		for _, f := range m.Files {
			id := f.Blob
			start[f.Path] = checkpoints.State{Content: &id, Mode: f.Mode, Size: f.Size}
		}
		sr, err := c.scanNow(ctx)
		if err != nil {
			return nil, err
		}
		now = map[string]checkpoints.State{}
		for _, f := range sr.Manifest.Files {
			id := f.Blob
			now[f.Path] = checkpoints.State{Content: &id, Mode: f.Mode, Size: f.Size}
		}
	}
	for _, f := range cp.Files {
		if _, ok := start[f.Path]; !ok {
			start[f.Path] = f.State()
		}
	}
	current := func(p string) (checkpoints.State, bool) {
		if now != nil {
			if st, ok := now[p]; ok {
				return st, true
			}
		}
		st, err := c.cap.StateWith(ctx, p, capture.Hash)
		return st, err == nil
	}
	var out []Change
	for p, was := range start {
		is, ok := current(p)
		switch {
		case !ok:
			continue // now a symlink or unreadable: not ours to judge
		case was.Exists() && !is.Exists():
			out = append(out, Change{p, "deleted"})
		case !was.Exists() && is.Exists():
			out = append(out, Change{p, "added"})
		case !was.Equal(is):
			out = append(out, Change{p, "modified"})
		}
	}
	for p := range now {
		if _, ok := start[p]; !ok {
			out = append(out, Change{p, "added"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
