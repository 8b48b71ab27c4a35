package capture

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"testing"
)

// deepTree makes a file depth directories below f's root, each directory
// from its parent's handle (the absolute path is longer than PATH_MAX),
// and returns its workspace-relative path.
func deepTree(t *testing.T, f *fixture, depth int) string {
	t.Helper()
	rel := strings.Repeat("d/", depth) + "f"
	r, err := os.OpenRoot(f.root)
	for range depth {
		if err == nil {
			err = r.Mkdir("d", 0o755)
		}
		if err == nil {
			next, oerr := r.OpenRoot("d")
			r.Close()
			r, err = next, oerr
		}
	}
	if err == nil {
		err = r.WriteFile("f", []byte("deep"), 0o644)
		r.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// countOpens counts the directories fn opens below the root.
func countOpens(fn func()) int {
	var n atomic.Int64 // CaptureAll's readers open directories at once
	openedDir = func() { n.Add(1) }
	defer func() { openedDir = nil }()
	fn()
	return int(n.Load())
}

// TestDeepPathWorkIsLinear: every operation a rewind makes on one path
// opens each directory on its way a bounded number of times. SyncDirs
// (which fsyncs every directory on the way) opened the whole chain again
// for each of its directories: depth²/2 opens, 2 million at depth 2,000,
// where a rewind ran past ten minutes.
func TestDeepPathWorkIsLinear(t *testing.T) {
	const depth = 2000
	f := newFixture(t)
	rel := deepTree(t, f, depth)
	stage := Staged{}
	var dirs []string // rel's directories, deepest first
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	r, err := os.OpenRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, op := range []struct {
		name string
		fn   func() error
	}{
		{"Rel", func() error { _, err := f.ws.Rel(rel); return err }},
		{"Inspect", func() error { _, err := f.ws.Inspect(rel); return err }},
		{"Blocker", func() error {
			if a, e, found := f.ws.Blocker(rel + "/below"); !found || a != rel || e.Kind != Regular {
				t.Errorf("Blocker(%s/below) = %.20s…, %v, %v; want the file, Regular, true", rel, a, e.Kind, found)
			}
			return nil
		}},
		{"Stage", func() (err error) { stage, err = f.ws.Stage(rel, "1", strings.NewReader("new"), 0o644); return err }},
		{"Commit", func() error { return f.ws.Commit(stage) }},
		{"SyncDirs", func() error { return f.ws.SyncDirs([]string{rel}) }},
		{"CleanStaged", func() error { f.ws.CleanStaged([]string{rel}, "1"); return nil }},
		{"read", func() error {
			if b, err := r.ReadFile(rel); string(b) != "new" {
				t.Errorf("the deep file holds %q, %v after Commit; want new", b, err)
			}
			return nil
		}},
		{"Remove", func() error { return f.ws.Remove(rel, dirs) }},
	} {
		var err error
		if n := countOpens(func() { err = op.fn() }); n > 3*depth {
			t.Errorf("%s opened %d directories for a path %d deep, want at most %d", op.name, n, depth, 3*depth)
		}
		if err != nil {
			t.Errorf("%s: %v", op.name, err)
		}
	}
	if _, err := r.Lstat("d"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove left the emptied directories: %v", err)
	}
}
