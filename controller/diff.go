package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/quote"
)

// maxDiffBytes bounds the size of a file Diff renders as text.
const maxDiffBytes = 4 << 20

// FileDiff is what a code rewind would do to one path.
type FileDiff struct {
	Path   string `json:"path"`
	Action string `json:"action"` // "restore" or "delete"
	// Unified is the unified diff from the current content (a/) to the
	// rewound content (b/); empty for binary or oversized files, for which
	// Note says why.
	Unified string `json:"unified"`
	Note    string `json:"note,omitempty"`
	// OldMode and NewMode are the file modes before and after, as git
	// writes them ("100644", "100755"); empty for an absent side.
	OldMode string `json:"old_mode,omitempty"`
	NewMode string `json:"new_mode,omitempty"`
}

// gitMode writes a regular file's permission bits as git's diff headers
// do: 100 then the three octal digits.
func gitMode(s checkpoints.State) string {
	if !s.Exists() {
		return ""
	}
	return fmt.Sprintf("100%03o", uint32(s.Mode.Perm()))
}

// Diff returns what a code Rewind to p would change, path by path, and the
// paths it would skip: to a turn's start or to one of its steps (ErrNoStep
// when the turn has no such step). It changes nothing.
func (c *Controller) Diff(ctx context.Context, p Target) ([]FileDiff, []Skip, error) {
	cp, err := c.idx.Turn(ctx, p.Turn)
	if errors.Is(err, checkpoints.ErrNotFound) {
		return nil, nil, fmt.Errorf("controller: diff turn %s: %w", p, c.noTurn(ctx, p.Turn))
	}
	if err != nil {
		return nil, nil, err
	}
	if cp.Pruned {
		return nil, nil, fmt.Errorf("controller: diff turn %s: %w", p, checkpoints.ErrPruned)
	}
	if p.Step > 0 {
		st, err := c.idx.StepOf(ctx, p.Turn, p.Step)
		if errors.Is(err, checkpoints.ErrNoStep) {
			return nil, nil, fmt.Errorf("controller: diff turn %s: %w", p, ErrNoStep)
		}
		if err != nil {
			return nil, nil, err
		}
		cp.Seq = st.Seq
	}
	targets, limited, err := c.targets(ctx, cp)
	if err != nil {
		return nil, nil, err
	}
	files, skipped, err := c.plan(ctx, targets, true)
	if err != nil {
		return nil, nil, fmt.Errorf("controller: diff turn %s: %w", p, err)
	}
	skipped = withSkips(skipped, limited)
	out := make([]FileDiff, 0, len(files))
	for _, f := range files {
		d, err := c.fileDiff(ctx, f)
		if err != nil {
			return nil, nil, fmt.Errorf("controller: diff turn %s: %w", p, err)
		}
		out = append(out, d)
	}
	return out, skipped, nil
}

func (c *Controller) fileDiff(ctx context.Context, f checkpoints.OpFile) (FileDiff, error) {
	d := FileDiff{Path: f.Path, Action: "restore", OldMode: gitMode(f.Before), NewMode: gitMode(f.After)}
	if !f.After.Exists() {
		d.Action = "delete"
	}
	if f.Before.Size > maxDiffBytes || f.After.Size > maxDiffBytes {
		d.Note = "file too large to diff"
		return d, nil
	}
	before, err := c.read(ctx, f.Path, f.Before)
	if err != nil {
		return d, err
	}
	after, err := c.read(ctx, f.Path, f.After)
	if err != nil {
		return d, err
	}
	if !isText(before) || !isText(after) {
		d.Note = "binary files differ"
		return d, nil
	}
	// The labels as git writes them: a name that needs quoting is
	// quoted, so it cannot end the header line or forge another.
	oldLabel, newLabel := quote.Path("a/"+f.Path), quote.Path("b/"+f.Path)
	if !f.Before.Exists() {
		oldLabel = "/dev/null"
	}
	if !f.After.Exists() {
		newLabel = "/dev/null"
	}
	d.Unified = udiff.Unified(oldLabel, newLabel, string(before), string(after))
	return d, nil
}

// read returns the bytes of a state: from the store when it has a blob id
// (after a dry-run plan the current file's id may not be stored, so the
// workspace is read instead when the store lacks it).
func (c *Controller) read(ctx context.Context, path string, s checkpoints.State) ([]byte, error) {
	if !s.Exists() {
		return nil, nil
	}
	if ok, err := c.store.Has(ctx, *s.Content); err == nil && ok {
		return c.store.Get(ctx, *s.Content)
	}
	f, _, err := c.ws.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxDiffBytes+1))
}

func isText(b []byte) bool {
	return !bytes.ContainsRune(b, 0) && utf8.Valid(b)
}
