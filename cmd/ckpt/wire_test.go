package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestJSONSameInEveryFrontEnd: on one session, the CLI's --json, the HTTP
// API and the MCP tools (the real `ckpt mcp` process) give the same
// document for a turn list with steps, a diff, a dry-run rewind and the
// history, field for field; the MCP tools only add their summary (and
// show_diff its truncated flag). Names that are not UTF-8 are in it, with
// their path_bytes.
func TestJSONSameInEveryFrontEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary as a process")
	}
	ws, store := t.TempDir(), t.TempDir()
	cli := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := ckptRun(t, ws, store, args...)
		if code != 0 {
			t.Fatalf("ckpt %v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	write := func(rel, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	odd := "caf\xe9.txt"
	write("a.txt", "v0\n")
	cli("turn", "make a")
	cli("step", "--tool", "Edit", "toolu_1")
	cli("capture", filepath.Join(ws, "a.txt"), filepath.Join(ws, odd))
	write("a.txt", "v1\n")
	write(odd, "new\n")
	cli("message", "assistant", "made a")
	cli("turn", "change a")
	cli("capture", filepath.Join(ws, "a.txt"))
	write("a.txt", "v2\n")
	cli("rewind", "1", "--scope", "code")
	cli("undo")
	cli("turn", "third")

	srv := startServe(t, ws, store, serveOptions{})
	api := func(method, path, body string) string {
		t.Helper()
		code, out := call(t, method, srv.url+path, testToken, body)
		if code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, code, out)
		}
		return out
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &mcpEnv{t: t, bin: ckptBinary(t), ws: ws, store: store}
	var stderr bytes.Buffer
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ckpt-test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: e.mcpCmd(&stderr)}, nil)
	if err != nil {
		t.Fatalf("connect: %v: %s", err, stderr.Bytes())
	}
	defer cs.Close()
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %v: %s", name, args, err, res, stderr.Bytes())
		}
		var doc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}

	list := tool("list_checkpoints", nil)
	diff := tool("show_diff", map[string]any{"turn": 0})
	rewind := tool("rewind", map[string]any{"turn": 0, "dry_run": true})
	history := tool("history", nil)
	for _, d := range []map[string]any{diff, rewind} {
		delete(d, "summary")
		delete(d, "truncated")
	}
	for _, tc := range []struct {
		name          string
		cli, api, mcp any
	}{
		{"list", cli("list", "--steps", "--json"), api("GET", "/api/checkpoints", ""), list["checkpoints"]},
		{"diff", cli("diff", "0", "--json"), api("GET", "/api/diff?turn=0", ""), diff},
		{"rewind", cli("rewind", "0", "--dry-run", "--json"), api("POST", "/api/rewind", `{"turn":0,"dry_run":true}`), rewind},
		{"history", cli("history", "--json"), api("GET", "/api/history", ""), history["ops"]},
	} {
		c, h, m := decode(t, tc.cli), decode(t, tc.api), roundTrip(t, tc.mcp)
		if !reflect.DeepEqual(c, h) {
			t.Errorf("%s: the CLI's\n%v\nthe HTTP API's\n%v", tc.name, c, h)
		}
		if !reflect.DeepEqual(c, m) {
			t.Errorf("%s: the CLI's\n%v\nthe MCP tool's\n%v", tc.name, c, m)
		}
	}
	// The conversation, in the CLI and the HTTP API (MCP has no tool for it).
	if c, h := decode(t, cli("log", "--json")), decode(t, api("GET", "/api/conversation", "")); !reflect.DeepEqual(c, h) {
		t.Errorf("log: the CLI's\n%v\nthe HTTP API's\n%v", c, h)
	}
	// The documents have what the test is about: steps, path_bytes.
	steps := decode(t, cli("list", "--steps", "--json")).([]any)[0].(map[string]any)["steps"].([]any)
	if st := steps[0].(map[string]any); st["key"] != "toolu_1" || st["tool"] != "Edit" || len(st["files"].([]any)) != 2 {
		t.Errorf("turn 0's step: %v", st)
	}
	if _, ok := decode(t, cli("diff", "0", "--json")).(map[string]any)["path_bytes"]; !ok {
		t.Error("diff 0 has no path_bytes")
	}
}

func decode(t *testing.T, s any) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s.(string)), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// roundTrip is v as JSON would give it back: maps and slices of any.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, string(b))
}
