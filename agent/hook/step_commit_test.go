package hook

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// walCommits counts the transactions committed to the SQLite WAL file of
// db since the WAL last began: its frames that end a commit (a database
// size in their header) under the WAL header's salt.
func walCommits(t *testing.T, db string) int {
	t.Helper()
	b, err := os.ReadFile(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 32 {
		return 0
	}
	page := int(binary.BigEndian.Uint32(b[8:12]))
	salt := b[16:24]
	n := 0
	for off := 32; off+24+page <= len(b); off += 24 + page {
		h := b[off : off+24]
		if string(h[8:16]) != string(salt) {
			break // an older WAL's frame: the end of this one's
		}
		if binary.BigEndian.Uint32(h[4:8]) != 0 {
			n++
		}
	}
	return n
}

// TestToolCallCommitsIndexOnce: through the resident hook server, a
// PreToolUse that captures a file opens its tool call's step in the
// transaction that records the file, so the index commits once per tool
// call (the blob store once more), not once for the step and again for
// the capture; the step and its file are recorded all the same, a second
// hook of the same call lands in its step and commits nothing, and the
// next call's edit of the file is that step's first touch.
func TestToolCallCommitsIndexOnce(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(&Handler{Store: store}, "test", io.Discard)
	defer s.Close()
	ag := hookServerAgent("claude")
	event := func(name string, extra map[string]any) {
		t.Helper()
		ev := map[string]any{"session_id": "s1", "cwd": root, "hook_event_name": name}
		for k, v := range extra {
			ev[k] = v
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if f := s.hd.handle(ctx, ag, Options{}, data, s); f != nil {
			t.Fatalf("%s: %s", name, f.Msg)
		}
	}
	write := func(id, file, content string) {
		t.Helper()
		p := filepath.Join(root, file)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		event("PreToolUse", map[string]any{"tool_name": "Write", "tool_use_id": id,
			"tool_input": map[string]any{"file_path": p, "content": "new"}})
	}
	event("UserPromptSubmit", map[string]any{"prompt": "edit things"})
	db := filepath.Join(controller.OpenStore(store).SessionDir("s1"), "index.db")
	for i, c := range []struct {
		id, file string
		commits  int
	}{{"t1", "a.go", 1}, {"t1", "a.go", 0}, {"t2", "a.go", 1}, {"t3", "b.go", 1}} {
		before := walCommits(t, db)
		write(c.id, c.file, fmt.Sprint("content ", i))
		if n := walCommits(t, db) - before; n != c.commits {
			t.Errorf("event %d (%s of %s): %d index commits, want %d", i, c.id, c.file, n, c.commits)
		}
	}
	c, release, err := s.open(ctx, root, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{Steps: true})
	if err != nil || len(cps) != 1 {
		t.Fatalf("%d turns, %v; want 1", len(cps), err)
	}
	steps := cps[0].Steps
	want := []struct{ key, file string }{{"t1", "a.go"}, {"t2", "a.go"}, {"t3", "b.go"}}
	if len(steps) != len(want) {
		t.Fatalf("%d steps %+v, want %d", len(steps), steps, len(want))
	}
	for i, w := range want {
		st := steps[i]
		if st.Number != i+1 || st.Key != w.key || st.Tool != "Write" || len(st.Files) != 1 || st.Files[0].Path != w.file || st.Files[0].Content == nil {
			t.Fatalf("step %d: %+v; want %s recording %s", i+1, st, w.key, w.file)
		}
	}
	if *steps[0].Files[0].Content == *steps[1].Files[0].Content {
		t.Error("steps 1 and 2 recorded a.go with the same content; step 2's is its edit")
	}
}
