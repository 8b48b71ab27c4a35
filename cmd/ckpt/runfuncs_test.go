package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunFunctions drives the core commands through their run functions,
// with options built by hand instead of parsed flags: turn, capture,
// message, log, list and diff, as the CLI would run them.
func TestRunFunctions(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	var out, errb bytes.Buffer
	a := &app{workspace: ws, store: store, stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	step := func(what string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v (stderr %q)", what, err, errb.String())
		}
		s := out.String()
		out.Reset()
		return s
	}
	f := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(f, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := step("turn", a.runTurn(ctx, turnOptions{prompt: "first"})); got != "0\n" {
		t.Errorf("turn printed %q, want 0", got)
	}
	if got := step("capture", a.runCapture(ctx, captureOptions{paths: []string{f}})); !strings.Contains(got, "captured a.txt") {
		t.Errorf("capture printed %q", got)
	}
	if err := os.WriteFile(f, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("message", a.runMessage(ctx, messageOptions{role: "assistant", text: "changed a"}))
	if got := step("log", a.runLog(ctx)); got != "[0] user:       first\n[0] assistant:  changed a\n" {
		t.Errorf("log printed %q", got)
	}
	if got := step("list", a.runList(ctx, listOptions{since: -1})); !strings.Contains(got, "first") || !strings.Contains(got, "a.txt") {
		t.Errorf("list printed %q, want turn 0 with a.txt", got)
	}
	if got := step("diff", a.runDiff(ctx, diffOptions{turn: 0})); !strings.Contains(got, "-two\n+one\n") {
		t.Errorf("diff printed %q, want two back to one", got)
	}
}
