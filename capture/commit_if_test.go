package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// CommitIf shows check what the path holds just before the rename (absent,
// or the file's hash and mode) and renames only when check accepts it; a
// refusal removes the temp file and leaves the path as it is.
func TestCommitIfLooksFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(t, "a.txt", "old", 0o640)
	oldID := cas.Sum([]byte("old"))

	s, err := f.ws.Stage("a.txt", "7", strings.NewReader("new"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("changed")
	var seen checkpoints.State
	err = f.ws.CommitIf(s, func(cur checkpoints.State) error { seen = cur; return refused })
	if !errors.Is(err, refused) {
		t.Fatalf("CommitIf = %v, want the check's error", err)
	}
	if seen.Content == nil || *seen.Content != oldID || seen.Mode != 0o640 || seen.Size != 3 {
		t.Fatalf("check saw %+v, want the old file's id %s, mode 0640, size 3", seen, oldID.Short())
	}
	if got, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(got) != "old" {
		t.Fatalf("a.txt = %q after a refusal, want \"old\"", got)
	}
	if got := dirNames(t, f.root); got != "a.txt" {
		t.Fatalf("after a refusal the directory holds %q, want only a.txt", got)
	}

	for _, rel := range []string{"a.txt", "b.txt"} {
		s, err := f.ws.Stage(rel, "7", strings.NewReader("new"), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		seen = checkpoints.State{Size: -1}
		if err := f.ws.CommitIf(s, func(cur checkpoints.State) error { seen = cur; return nil }); err != nil {
			t.Fatal(err)
		}
		if rel == "b.txt" && (seen.Exists() || seen.Size != 0) {
			t.Fatalf("check saw %+v for an absent path, want absent", seen)
		}
		if got, _ := os.ReadFile(filepath.Join(f.root, rel)); string(got) != "new" {
			t.Fatalf("%s = %q, want \"new\"", rel, got)
		}
	}
}
