package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	err = f.ws.CommitIf(s, nil, func(cur checkpoints.State) error { seen = cur; return refused })
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
		if err := f.ws.CommitIf(s, nil, func(cur checkpoints.State) error { seen = cur; return nil }); err != nil {
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

// CommitIf takes the path's state from the stat entry of the caller's own
// read (StateSeen) while the file's stat matches it and is not racy, so a
// rewind reads each current file once; a stat that changed (ctime too,
// whatever the mtime says) or is too recent to vouch sends it back to the
// file's bytes.
func TestCommitIfTrustsAVouchingStat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	long := time.Now().Add(-time.Hour)
	age := func(rel string) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(f.root, rel), long, long); err != nil {
			t.Fatal(err)
		}
	}
	// look reads rel with StateSeen, swaps the entry's blob for a forged
	// one (what the stat vouches for is all CommitIf can know without a
	// read), lets change run, and returns the id CommitIf's check saw.
	forged := cas.Sum([]byte("never in the file"))
	look := func(rel string, change func()) cas.ID {
		t.Helper()
		st, seen, err := f.c.StateSeen(ctx, rel, Hash)
		if err != nil || seen == nil || seen.Blob != *st.Content || seen.Size != st.Size {
			t.Fatalf("StateSeen(%s) = %+v, %+v, %v: want the read's stat entry", rel, st, seen, err)
		}
		seen.Blob = forged
		change()
		s, err := f.ws.Stage(rel, "7", strings.NewReader("new"), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		var got cas.ID
		refused := errors.New("refused")
		if err := f.ws.CommitIf(s, seen, func(cur checkpoints.State) error { got = *cur.Content; return refused }); !errors.Is(err, refused) {
			t.Fatalf("CommitIf(%s) = %v, want the check's refusal", rel, err)
		}
		return got
	}

	f.write(t, "old.txt", "old", 0o644)
	age("old.txt")
	want := forged
	if !statSeesCTime {
		want = cas.Sum([]byte("old")) // no ctime in the stat: always read
	}
	if got := look("old.txt", func() {}); got != want {
		t.Fatalf("an unchanged, old file: check saw %s, want %s (the stat entry's blob: no second read)", got.Short(), want.Short())
	}

	f.write(t, "edited.txt", "old", 0o644)
	age("edited.txt")
	got := look("edited.txt", func() {
		f.write(t, "edited.txt", "OLD", 0o644) // same size; its mtime put back, its ctime moves
		age("edited.txt")
	})
	if got != cas.Sum([]byte("OLD")) {
		t.Fatalf("a file rewritten since the read: check saw %s, want the hash of its bytes now", got.Short())
	}

	// mtime now: racy, the stat cannot vouch. Set an hour ahead, it stays
	// "now" through a loaded machine's pause of RacyWindow before the read.
	f.write(t, "fresh.txt", "old", 0o644)
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(f.root, "fresh.txt"), ahead, ahead); err != nil {
		t.Fatal(err)
	}
	if got := look("fresh.txt", func() {}); got != cas.Sum([]byte("old")) {
		t.Fatalf("a file changed just now: check saw %s, want the hash of its bytes", got.Short())
	}
}
