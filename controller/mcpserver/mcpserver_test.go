package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/mcpserver"
	"github.com/ckpt/ckpt/controller/wire"
)

// binary is content no text tool would keep intact: every byte value.
var binary = func() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

// env is a real controller on a temp workspace and store, served by the
// MCP server over the SDK's in-memory transport, with a client session.
type env struct {
	t  *testing.T
	ws string
	c  *controller.Controller
	cs *mcp.ClientSession
}

// newEnv makes a session with three turns:
//
//	turn 0 "make a":   a.txt created (v1); b.bin (binary, 0755) rewritten as CRLF text, 0644
//	turn 1 "change a": a.txt v1 -> v2
//	turn 2 "third":    open, nothing captured
func newEnv(t *testing.T, o mcpserver.Options) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, ws: t.TempDir()}
	c, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: t.TempDir(), NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.c = c
	e.write("b.bin", binary, 0o755)
	e.step(c.BeginTurn(ctx, "make a", controller.TurnOptions{}))
	e.capture(c, "a.txt", nil)
	e.capture(c, "b.bin", nil)
	e.write("a.txt", []byte("v1\n"), 0o644)
	e.write("b.bin", []byte("now text\r\nline two\r\n"), 0o644)
	e.step(c.BeginTurn(ctx, "change a", controller.TurnOptions{}))
	e.capture(c, "a.txt", nil)
	e.write("a.txt", []byte("v2\n"), 0o644)
	e.step(c.BeginTurn(ctx, "third", controller.TurnOptions{}))

	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(c, o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	e.cs = cs
	return e
}

func (e *env) step(_ any, err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// capture captures the workspace path rel into c's open turn (into step
// st, when set).
func (e *env) capture(c *controller.Controller, rel string, st *controller.Step) {
	e.t.Helper()
	if _, errs := c.Capture(context.Background(), controller.CaptureOptions{Paths: []string{e.abs(rel)}, Step: st}); errs[0] != nil {
		e.t.Fatal(errs[0])
	}
}

func (e *env) abs(rel string) string { return filepath.Join(e.ws, rel) }

func (e *env) write(rel string, b []byte, mode os.FileMode) {
	e.t.Helper()
	p := e.abs(rel)
	if err := os.WriteFile(p, b, mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		e.t.Fatal(err)
	}
}

// file checks rel's exact bytes and mode; want nil means absent.
func (e *env) file(rel string, want []byte, mode os.FileMode) {
	e.t.Helper()
	got, err := os.ReadFile(e.abs(rel))
	if want == nil {
		if !os.IsNotExist(err) {
			e.t.Fatalf("%s: got %q (err %v), want absent", rel, got, err)
		}
		return
	}
	if err != nil {
		e.t.Fatalf("%s: %v", rel, err)
	}
	if !bytes.Equal(got, want) {
		e.t.Fatalf("%s: got %q, want %q", rel, got, want)
	}
	fi, err := os.Stat(e.abs(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		e.t.Fatalf("%s: mode got %v, want %v", rel, fi.Mode().Perm(), mode)
	}
}

// call calls a tool and decodes its structured result into out (when not
// nil). It fails the test on a protocol error, and when the result's
// isError is not wantErr.
func (e *env) call(name string, args map[string]any, out any, wantErr bool) *mcp.CallToolResult {
	e.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s %v: protocol error %v", name, args, err)
	}
	if res.IsError != wantErr {
		e.t.Fatalf("%s %v: isError got %v, want %v: %s", name, args, res.IsError, wantErr, text(res))
	}
	if out != nil {
		if res.StructuredContent == nil {
			e.t.Fatalf("%s %v: no structured content: %s", name, args, text(res))
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			e.t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestListTools(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("%s: description %q is too thin for a model", tool.Name, tool.Description)
		}
		in, _ := json.Marshal(tool.InputSchema)
		out, _ := json.Marshal(tool.OutputSchema)
		if !strings.Contains(string(in), `"type":"object"`) || !strings.Contains(string(out), `"type":"object"`) {
			t.Errorf("%s: schemas in %s out %s, want objects", tool.Name, in, out)
		}
		if tool.Annotations == nil {
			t.Errorf("%s: no annotations", tool.Name)
			continue
		}
		writes := tool.Name == "rewind" || tool.Name == "undo" || tool.Name == "redo"
		if tool.Annotations.ReadOnlyHint == writes {
			t.Errorf("%s: readOnlyHint %v", tool.Name, tool.Annotations.ReadOnlyHint)
		}
	}
	slices.Sort(names)
	want := []string{"history", "list_checkpoints", "redo", "rewind", "show_diff", "status", "undo"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools: got %v, want %v", names, want)
	}
	for _, tool := range res.Tools {
		if tool.Name != "rewind" {
			continue
		}
		in, _ := json.Marshal(tool.InputSchema)
		for _, s := range []string{`"enum":["code","conversation","both"]`, `"step":{`, `"required":["turn"]`, `"minimum":0`} {
			if !strings.Contains(string(in), s) {
				t.Errorf("rewind input schema %s lacks %s", in, s)
			}
		}
	}
}

func TestListCheckpoints(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	var out mcpserver.ListOutput
	res := e.call("list_checkpoints", nil, &out, false)
	if out.Session != e.c.Session() || out.Workspace != e.c.WorkspaceRoot() {
		t.Errorf("session %q workspace %q, want %q %q", out.Session, out.Workspace, e.c.Session(), e.c.WorkspaceRoot())
	}
	type tf struct {
		turn   int
		prompt string
		files  []wire.File
	}
	want := []tf{
		{0, "make a", []wire.File{{Path: "a.txt", Kind: "created"}, {Path: "b.bin", Kind: "modified"}}},
		{1, "change a", []wire.File{{Path: "a.txt", Kind: "modified"}}},
		{2, "third", []wire.File{}},
	}
	if len(out.Checkpoints) != len(want) {
		t.Fatalf("got %d checkpoints %+v, want %d", len(out.Checkpoints), out.Checkpoints, len(want))
	}
	for i, w := range want {
		g := out.Checkpoints[i]
		if g.Turn != w.turn || g.Prompt != w.prompt || !reflect.DeepEqual(g.Files, w.files) || g.Time == "" {
			t.Errorf("checkpoint %d: got %+v, want %+v", i, g, w)
		}
	}
	// The text content is the same document, for clients that read text.
	if !strings.Contains(text(res), `"prompt":"change a"`) {
		t.Errorf("text content %s lacks the checkpoints", text(res))
	}
	if strings.Contains(text(res), "null") {
		t.Errorf("text content %s has a null list", text(res))
	}
}

func TestShowDiff(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	var out mcpserver.DiffOutput
	e.call("show_diff", map[string]any{"turn": 1}, &out, false)
	if len(out.Files) != 1 || out.Files[0].Path != "a.txt" || out.Files[0].Action != "restore" ||
		!strings.Contains(out.Files[0].Unified, "-v2") || !strings.Contains(out.Files[0].Unified, "+v1") {
		t.Fatalf("diff to turn 1: got %+v, want a.txt restored v2 -> v1", out.Files)
	}
	if out.Truncated || !strings.Contains(out.Summary, "restore 1 file(s) and delete 0") {
		t.Errorf("truncated %v summary %q", out.Truncated, out.Summary)
	}

	e.call("show_diff", map[string]any{"turn": 0}, &out, false)
	actions := map[string]string{}
	for _, f := range out.Files {
		actions[f.Path] = f.Action
	}
	if len(out.Files) != 2 || actions["a.txt"] != "delete" || actions["b.bin"] != "restore" {
		t.Fatalf("diff to turn 0: got %+v, want a.txt deleted and b.bin restored", out.Files)
	}

	// One file alone, by relative or absolute path.
	for _, p := range []string{"b.bin", "./b.bin", e.abs("b.bin")} {
		e.call("show_diff", map[string]any{"turn": 0, "path": p}, &out, false)
		if len(out.Files) != 1 || out.Files[0].Path != "b.bin" || out.Files[0].OldMode != "100644" || out.Files[0].NewMode != "100755" {
			t.Errorf("path %s: got %+v, want b.bin alone with its mode change", p, out.Files)
		}
	}
	res := e.call("show_diff", map[string]any{"turn": 0, "path": "../outside"}, nil, true)
	if !strings.Contains(text(res), "not a file inside the workspace") {
		t.Errorf("path outside: %s", text(res))
	}
	// Nothing changed on disk.
	e.file("a.txt", []byte("v2\n"), 0o644)
}

func TestShowDiffTruncates(t *testing.T) {
	e := newEnv(t, mcpserver.Options{MaxDiffBytes: 10})
	var out mcpserver.DiffOutput
	e.call("show_diff", map[string]any{"turn": 1}, &out, false)
	if !out.Truncated || len(out.Files) != 1 || out.Files[0].Unified != "" || !strings.Contains(out.Files[0].Note, `path "a.txt"`) {
		t.Fatalf("over the bound: got truncated %v %+v, want a.txt without diff and a note naming its path", out.Truncated, out.Files)
	}
	// Asked alone, the file's diff is whole.
	e.call("show_diff", map[string]any{"turn": 1, "path": "a.txt"}, &out, false)
	if out.Truncated || !strings.Contains(out.Files[0].Unified, "+v1") {
		t.Fatalf("alone: got truncated %v %+v", out.Truncated, out.Files)
	}
}

func TestRewindUndoRedo(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	var r mcpserver.Result

	e.call("rewind", map[string]any{"turn": 0, "dry_run": true}, &r, false)
	if !r.DryRun || r.Scope != "both" || !slices.Equal(r.Restored, []string{"b.bin"}) || !slices.Equal(r.Deleted, []string{"a.txt"}) ||
		r.Prompt != "make a" || len(r.Conflicts) != 0 || !strings.HasPrefix(r.Summary, "dry run") {
		t.Fatalf("dry run: got %+v", r)
	}
	e.file("a.txt", []byte("v2\n"), 0o644)
	e.file("b.bin", []byte("now text\r\nline two\r\n"), 0o644)

	e.call("rewind", map[string]any{"turn": 0}, &r, false)
	if r.DryRun || !r.Changed || r.Prompt != "make a" || !slices.Equal(r.Deleted, []string{"a.txt"}) {
		t.Fatalf("rewind: got %+v", r)
	}
	e.file("a.txt", nil, 0)
	e.file("b.bin", binary, 0o755)
	var list mcpserver.ListOutput
	e.call("list_checkpoints", nil, &list, false)
	if len(list.Checkpoints) != 0 {
		t.Fatalf("after a both rewind to turn 0: %d checkpoints, want 0", len(list.Checkpoints))
	}

	var st mcpserver.StatusOutput
	e.call("status", nil, &st, false)
	if !st.CanUndo || st.CanRedo {
		t.Errorf("after rewind: can_undo %v can_redo %v, want true false", st.CanUndo, st.CanRedo)
	}

	e.call("undo", map[string]any{"dry_run": true}, &r, false)
	if !r.DryRun || !slices.Equal(r.Restored, []string{"a.txt", "b.bin"}) {
		t.Fatalf("undo dry run: got %+v", r)
	}
	e.file("a.txt", nil, 0)

	e.call("undo", nil, &r, false)
	if !r.Changed || !strings.HasPrefix(r.Summary, "undo done") {
		t.Fatalf("undo: got %+v", r)
	}
	e.file("a.txt", []byte("v2\n"), 0o644)
	e.file("b.bin", []byte("now text\r\nline two\r\n"), 0o644)
	e.call("list_checkpoints", nil, &list, false)
	if len(list.Checkpoints) != 3 {
		t.Fatalf("after undo: %d checkpoints, want 3", len(list.Checkpoints))
	}

	e.call("redo", nil, &r, false)
	if !r.Changed || r.Turn != 0 {
		t.Fatalf("redo: got %+v", r)
	}
	e.file("a.txt", nil, 0)
	e.file("b.bin", binary, 0o755)

	var h mcpserver.HistoryOutput
	e.call("history", nil, &h, false)
	kinds := []string{}
	for _, op := range h.Ops {
		kinds = append(kinds, op.Kind)
	}
	if h.Total != 3 || !slices.Equal(kinds, []string{"redo", "undo", "rewind"}) || !h.Ops[0].NextUndo {
		t.Fatalf("history: total %d kinds %v (newest first), want 3 [redo undo rewind] with the redo next to undo", h.Total, kinds)
	}
	e.call("history", map[string]any{"limit": 1}, &h, false)
	if len(h.Ops) != 1 || h.Total != 3 || h.Ops[0].Kind != "redo" {
		t.Fatalf("history limit 1: got %d ops (total %d)", len(h.Ops), h.Total)
	}

	// undo with op: the rewind itself, by its id from history.
	e.call("history", nil, &h, false)
	var rewindID int64
	for _, op := range h.Ops {
		if op.Kind == "rewind" {
			rewindID = op.ID
		}
	}
	e.call("undo", map[string]any{"op": rewindID}, &r, false)
	if !r.Changed || r.Turn != 0 {
		t.Fatalf("undo op %d: got %+v", rewindID, r)
	}
	e.file("a.txt", []byte("v2\n"), 0o644)
	e.file("b.bin", []byte("now text\r\nline two\r\n"), 0o644)
}

func TestRewindConflict(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	// A person edits a.txt after the agent left it.
	e.write("a.txt", []byte("by hand\n"), 0o644)
	var r mcpserver.Result

	// A dry run reports the conflict and does not fail.
	e.call("rewind", map[string]any{"turn": 1, "scope": "code", "dry_run": true}, &r, false)
	if !slices.Equal(r.Conflicts, []string{"a.txt"}) || !strings.Contains(r.Summary, "force: true") {
		t.Fatalf("dry run: got %+v, want the conflict on a.txt", r)
	}

	// Without force: a tool error carrying the result; nothing changed.
	res := e.call("rewind", map[string]any{"turn": 1, "scope": "code"}, &r, true)
	msg := text(res)
	if !slices.Equal(r.Conflicts, []string{"a.txt"}) || r.Changed || r.Turn != 1 || r.Scope != "code" {
		t.Fatalf("refused rewind: got %+v", r)
	}
	if !strings.Contains(msg, "a.txt") || !strings.Contains(msg, "force: true") || strings.Contains(msg, "\n") || strings.Contains(msg, "controller:") {
		t.Fatalf("refusal message %q: want one line naming a.txt and force: true", msg)
	}
	e.file("a.txt", []byte("by hand\n"), 0o644)

	// With force: done, and undo brings the hand edit back.
	e.call("rewind", map[string]any{"turn": 1, "scope": "code", "force": true}, &r, false)
	e.file("a.txt", []byte("v1\n"), 0o644)

	// Work since the rewind makes undo refuse too, until forced.
	e.write("a.txt", []byte("later\n"), 0o644)
	res = e.call("undo", nil, &r, true)
	if !slices.Equal(r.Conflicts, []string{"a.txt"}) || !strings.Contains(text(res), "force: true") {
		t.Fatalf("refused undo: %+v %q", r, text(res))
	}
	e.file("a.txt", []byte("later\n"), 0o644)
	e.call("undo", map[string]any{"force": true}, &r, false)
	e.file("a.txt", []byte("by hand\n"), 0o644)
}

func TestToolErrors(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"rewind", map[string]any{"turn": 99}, "list_checkpoints shows the turns"},
		{"rewind", map[string]any{"turn": 0, "scope": "files"}, "scope"},
		{"rewind", map[string]any{"turn": -1}, "turn"},
		{"rewind", map[string]any{}, "turn"},
		{"show_diff", map[string]any{"turn": 7}, "no such turn"},
		{"undo", nil, "nothing to undo"},
		{"redo", nil, "nothing to redo"},
		{"undo", map[string]any{"op": 42}, "op 42"},
		{"undo", map[string]any{"scope": "code"}, "scope"},
		{"history", map[string]any{"limit": -1}, "limit"},
	}
	for _, tc := range cases {
		res := e.call(tc.tool, tc.args, nil, true)
		msg := text(res)
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "controller: ") {
			t.Errorf("%s %v: message %q, want one line containing %q", tc.tool, tc.args, msg, tc.want)
		}
	}
	// The failures changed nothing.
	e.file("a.txt", []byte("v2\n"), 0o644)
	e.file("b.bin", []byte("now text\r\nline two\r\n"), 0o644)
}

func TestStatus(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	var st mcpserver.StatusOutput
	e.call("status", nil, &st, false)
	if st.OpenTurn == nil || *st.OpenTurn != 2 || st.OpenPrompt != "third" || st.Scan || len(st.Changes) != 0 || st.CanUndo || st.CanRedo {
		t.Fatalf("status: got %+v", st)
	}
	// A capture in the open turn, then a change: status lists it.
	e.capture(e.c, "a.txt", nil)
	e.write("a.txt", []byte("v3\n"), 0o644)
	if err := e.c.SetMeta(context.Background(), "scan", "on"); err != nil {
		t.Fatal(err)
	}
	e.call("status", nil, &st, false)
	if !st.Scan || len(st.Changes) != 1 || !reflect.DeepEqual(st.Changes[0], wire.Change{Path: "a.txt", Kind: "modified"}) {
		t.Fatalf("status after an edit: got %+v", st)
	}
}

func TestStatusBeforeAnyTurn(t *testing.T) {
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: t.TempDir(), Store: t.TempDir(), NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(c, mcpserver.Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("status: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out mcpserver.StatusOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.OpenTurn != nil || !strings.Contains(string(b), `"open_turn":null`) || !strings.Contains(string(b), `"changes":[]`) {
		t.Fatalf("status before any turn: %s", b)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_checkpoints"})
	if err != nil || res.IsError {
		t.Fatalf("list_checkpoints: %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"checkpoints":[]`) {
		t.Fatalf("list_checkpoints before any turn: %s", b)
	}
}

// TestSteps lists the open turn's tool calls and rewinds the code to just
// before one of them; a conversation scope with a step is refused.
func TestSteps(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	ctx := context.Background()
	for i, v := range []string{"v3\n", "v4\n"} {
		st, err := e.c.BeginStep(ctx, controller.StepOptions{Key: fmt.Sprint("toolu_", i), Tool: "Edit"})
		e.step(st, err)
		e.capture(e.c, "a.txt", &st)
		e.write("a.txt", []byte(v), 0o644)
	}
	var list mcpserver.ListOutput
	e.call("list_checkpoints", nil, &list, false)
	steps := list.Checkpoints[2].Steps
	if len(steps) != 2 || steps[1].Step != 2 || steps[1].Tool != "Edit" || len(steps[1].Files) != 1 || steps[1].Files[0].Path != "a.txt" {
		t.Fatalf("turn 2 steps: %+v", steps)
	}
	// The same step fields as the CLI's and the HTTP API's (package wire).
	if steps[1].Key != "toolu_1" || steps[1].Time == "" || !steps[1].Files[0].Existed {
		t.Errorf("turn 2 step 2: %+v, want key toolu_1, a time, a.txt existed", steps[1])
	}
	if len(list.Checkpoints[0].Steps) != 0 || list.Checkpoints[0].Steps == nil {
		t.Errorf("turn 0 steps: %#v, want []", list.Checkpoints[0].Steps)
	}

	var d mcpserver.DiffOutput
	e.call("show_diff", map[string]any{"turn": 2, "step": 2}, &d, false)
	if d.Step != 2 || len(d.Files) != 1 || !strings.Contains(d.Files[0].Unified, "+v3") {
		t.Fatalf("show_diff 2.2: %+v", d)
	}
	res := e.call("rewind", map[string]any{"turn": 2, "step": 2, "scope": "both"}, nil, true)
	if !strings.Contains(text(res), "a step rewinds code only") {
		t.Errorf("rewind 2.2 both: %s", text(res))
	}
	res = e.call("rewind", map[string]any{"turn": 2, "step": 5}, nil, true)
	if !strings.Contains(text(res), "no such step") {
		t.Errorf("rewind 2.5: %s", text(res))
	}
	e.file("a.txt", []byte("v4\n"), 0o644)

	var r mcpserver.Result
	e.call("rewind", map[string]any{"turn": 2, "step": 2}, &r, false)
	if r.Scope != "code" || r.Step != 2 || !slices.Equal(r.Restored, []string{"a.txt"}) || !strings.Contains(r.Summary, "turn 2.2") {
		t.Fatalf("rewind 2.2: %+v", r)
	}
	e.file("a.txt", []byte("v3\n"), 0o644)
	e.call("undo", nil, &r, false)
	e.file("a.txt", []byte("v4\n"), 0o644)
}

// TestPathBytes: a name that is not UTF-8 travels as its exact bytes in
// path_bytes, as in the CLI's documents, and the results still pass the
// tools' output schemas (a []byte is a base64 string there).
func TestPathBytes(t *testing.T) {
	e := newEnv(t, mcpserver.Options{})
	ctx := context.Background()
	name := "caf\xe9.txt"
	if _, errs := e.c.Capture(ctx, controller.CaptureOptions{Paths: []string{e.abs(name)}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	e.write(name, []byte("new\n"), 0o644)

	var list mcpserver.ListOutput
	e.call("list_checkpoints", nil, &list, false)
	files := list.Checkpoints[2].Files
	if len(files) != 1 || string(files[0].PathBytes) != name || files[0].Kind != "created" {
		t.Fatalf("turn 2 files: %+v, want %q with its bytes", files, name)
	}
	var d mcpserver.DiffOutput
	e.call("show_diff", map[string]any{"turn": 2}, &d, false)
	if len(d.Files) != 1 || d.Files[0].Action != "delete" || string(d.PathBytes[d.Files[0].Path]) != name {
		t.Fatalf("show_diff 2: %+v", d)
	}
	var r mcpserver.Result
	e.call("rewind", map[string]any{"turn": 2, "scope": "code", "dry_run": true}, &r, false)
	if len(r.Deleted) != 1 || string(r.PathBytes[r.Deleted[0]]) != name {
		t.Fatalf("rewind 2 dry run: %+v", r)
	}
}
