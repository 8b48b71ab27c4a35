package controller

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// maxStatBytes bounds the size of a file ListOptions.Lines reads to count
// lines.
const maxStatBytes = 4 << 20

// FileChange is what a turn did to one file: its kind and, listed with
// ListOptions.Lines, the lines added and removed.
type FileChange struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
	// Added and Removed count the lines added and removed from the turn's
	// start to its end; zero when Binary or not Known.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary: one side is not UTF-8 text (or holds a NUL byte).
	Binary bool `json:"binary"`
	// Known is false when a side could not be read or is over 4 MiB, and
	// when the lines were not asked for.
	Known bool `json:"known"`
}

// lineCounts counts into fc the lines added and removed over the turn in
// file f: its content at the turn's start against its content at the
// turn's end (the state recorded when the next turn opened; for the open
// turn, the file on disk now).
func (c *Controller) lineCounts(ctx context.Context, f checkpoints.FileSnap, open bool, fc *FileChange) {
	before, okB := c.statBlob(ctx, f.Content)
	var after []byte
	okA := false
	switch {
	case open:
		after, okA = c.statDisk(f.Path)
	case f.End != nil:
		after, okA = c.statBlob(ctx, f.End.Content)
	}
	switch {
	case !okB || !okA:
	case !isText(before) || !isText(after):
		fc.Known, fc.Binary = true, true
	default:
		fc.Known = true
		fc.Added, fc.Removed = countLines(string(before), string(after))
	}
}

// statBlob returns a state's bytes; nil id means the file did not exist.
func (c *Controller) statBlob(ctx context.Context, id *cas.ID) ([]byte, bool) {
	if id == nil {
		return nil, true
	}
	b, err := c.store.Get(ctx, *id)
	if err != nil || len(b) > maxStatBytes {
		return nil, false
	}
	return b, true
}

// statDisk returns a workspace file's bytes now; absent means empty.
func (c *Controller) statDisk(rel string) ([]byte, bool) {
	f, fi, err := c.ws.OpenFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi.Size() > maxStatBytes {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStatBytes+1))
	return b, err == nil && len(b) <= maxStatBytes
}

// countLines returns the lines added and removed going from before to after.
func countLines(before, after string) (added, removed int) {
	u := udiff.Unified("a", "b", before, after)
	for _, l := range strings.Split(u, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	return added, removed
}
