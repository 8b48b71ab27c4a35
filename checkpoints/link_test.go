package checkpoints_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// TestLinkIsNoSession: a directory of the sessions directory holding
// LinkFile and no index stands for another session: Sessions and the
// catalog (which gc, prune, verify and every listing go through) pass over
// it, as IsSessionEntry does. A directory with an index is a session
// whatever else it holds.
func TestLinkIsNoSession(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	storeSession(t, store, "s1", "one")
	storeSession(t, store, "s2", "two")
	link := checkpoints.SessionDir(store, "f1")
	if err := os.MkdirAll(link, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(link, checkpoints.LinkFile), []byte("s1\na1\ns1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A session that also holds the file is still a session.
	if err := os.WriteFile(filepath.Join(checkpoints.SessionDir(store, "s2"), checkpoints.LinkFile), []byte("s1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !checkpoints.IsLink(link) || checkpoints.IsLink(checkpoints.SessionDir(store, "s2")) || checkpoints.IsLink(checkpoints.SessionDir(store, "s1")) {
		t.Errorf("IsLink: f1 %v, s2 %v, s1 %v; want true, false, false", checkpoints.IsLink(link),
			checkpoints.IsLink(checkpoints.SessionDir(store, "s2")), checkpoints.IsLink(checkpoints.SessionDir(store, "s1")))
	}
	ids, err := checkpoints.Sessions(store)
	if err != nil || !reflect.DeepEqual(ids, []string{"s1", "s2"}) {
		t.Errorf("Sessions = %v, %v; want [s1 s2]", ids, err)
	}
	got := sessions(t, catalog(t, store, later), store) // fails on an unreadable entry
	if len(got) != 2 || got["s1"].ID != "s1" || got["s2"].ID != "s2" {
		t.Errorf("catalog sessions %v, want s1 and s2", got)
	}
	ents, err := os.ReadDir(filepath.Join(store, "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if want := e.Name() != "f1"; checkpoints.IsSessionEntry(filepath.Join(store, "sessions"), e) != want {
			t.Errorf("IsSessionEntry(%s) = %v, want %v", e.Name(), !want, want)
		}
	}
}
