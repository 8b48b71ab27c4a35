package retention_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

func TestVerifyFindsCorruptMissingAndOrphanByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "", "")
	big := strings.Repeat("a big file, stored as its own object file. ", 40000) // > 1 MiB
	f.write("big.txt", big)
	f.write("gone.txt", "this blob will be deleted behind ckpt's back")
	f.write("fine.txt", "intact")
	f.turn("t0")
	f.edit("big.txt", "small now")
	f.edit("gone.txt", "x")
	f.edit("fine.txt", "y")
	store := f.blobs()
	corrupt, missing := cas.Sum([]byte(big)), cas.Sum([]byte("this blob will be deleted behind ckpt's back"))
	orphan, _, err := store.Put(ctx, strings.NewReader("nobody references me"))
	if err != nil {
		t.Fatal(err)
	}
	// Plant the damage: flip a byte in big's object file, delete gone's row.
	obj := filepath.Join(checkpoints.BlobDir(f.store), "objects", corrupt.String()[:2], corrupt.String())
	b, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(obj, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, missing); err != nil {
		t.Fatal(err)
	}

	st := f.storeAPI()
	rep, err := st.Verify(ctx, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[cas.ID]retention.FindingKind{}
	for _, fd := range rep.Findings {
		got[fd.Blob] = fd.Kind
		if fd.Kind != retention.Orphan && (len(fd.Uses) != 1 || fd.Uses[0].Turn != 0) {
			t.Errorf("finding %s %s: uses %+v, want turn 0's snapshot", fd.Kind, fd.Blob.Short(), fd.Uses)
		}
	}
	want := map[cas.ID]retention.FindingKind{corrupt: retention.Corrupt, missing: retention.Missing, orphan: retention.Orphan}
	for id, k := range want {
		if got[id] != k {
			t.Errorf("blob %s: finding %q, want %q (all findings: %v)", id.Short(), got[id], k, got)
		}
	}
	if len(got) != len(want) || rep.OK() {
		t.Errorf("findings %v ok=%v; want exactly the three planted, and not OK", got, rep.OK())
	}

	// Repair says what is lost first, then marks it; verify is then clean
	// of losses, and a rewind skips the lost paths, restoring the rest.
	var told []string
	rep, err = st.Verify(ctx, true, func(fd retention.Finding) {
		for _, u := range fd.Uses {
			told = append(told, u.Path)
		}
	}, nil)
	if err != nil || rep.Repaired != 2 {
		t.Fatalf("repair = %d repaired, %v; want 2", rep.Repaired, err)
	}
	if strings.Join(told, ",") != "big.txt,gone.txt" && strings.Join(told, ",") != "gone.txt,big.txt" {
		t.Errorf("repair told %v, want big.txt and gone.txt", told)
	}
	rep, err = st.Verify(ctx, false, nil, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after repair: ok=%v %v findings=%+v", rep.OK(), err, rep.Findings)
	}
	res, err := f.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 2 || len(res.Restored) != 1 || res.Restored[0] != "fine.txt" {
		t.Errorf("rewind after repair: restored %v skipped %+v; want fine.txt restored, the lost two skipped", res.Restored, res.Skipped)
	}
	f.want("fine.txt", "intact")
	f.want("big.txt", "small now") // never replaced by anything else
	if b, _ := os.ReadFile(filepath.Join(f.ws, "gone.txt")); !bytes.Equal(b, []byte("x")) {
		t.Errorf("gone.txt = %q: a lost state must not be restored as absent", b)
	}
}
