package picker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ckpt/ckpt/controller"
)

// TestPickerModel drives the picker's model without a terminal, so its
// choices are checked even where tmux is missing.
func TestPickerModel(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := filepath.Join(ws, "a.txt")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(a, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(prompt string) {
		t.Helper()
		if _, err := c.BeginTurn(ctx, prompt, controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{a}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	write("one\n")
	turn("first")
	write("one\ntwo\nthree\n")
	turn("second")
	write("\x00binary")
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{Lines: true, Steps: true})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		keys      []string
		confirmed bool
		turn      int
		scope     controller.Scope
	}{
		{"default_is_no", []string{"enter", "enter", "enter"}, false, 1, controller.ScopeBoth},
		{"yes_both_newest", []string{"enter", "enter", "down", "enter"}, true, 1, controller.ScopeBoth},
		{"yes_code_oldest", []string{"down", "enter", "down", "down", "enter", "tab", "enter"}, true, 0, controller.ScopeCode},
		{"yes_conversation", []string{"j", "k", "enter", "j", "enter", "l", "enter"}, true, 1, controller.ScopeConversation},
		{"cancel_item", []string{"enter", "end", "down", "down", "down", "enter"}, false, 1, ""},
		{"esc", []string{"down", "esc", "enter"}, false, 0, controller.ScopeBoth},
		{"no_after_yes", []string{"enter", "enter", "down", "up", "enter"}, false, 1, controller.ScopeBoth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(ctx, c, cps)
			for _, k := range tc.keys {
				if _, cmd := m.key(k); cmd != nil {
					break // tea.Quit
				}
			}
			if m.confirmed != tc.confirmed {
				t.Errorf("confirmed = %v, want %v", m.confirmed, tc.confirmed)
			}
			if got := m.rows[m.sel].turn; got != tc.turn {
				t.Errorf("turn = %d, want %d", got, tc.turn)
			}
			if tc.scope != "" && m.scope() != tc.scope {
				t.Errorf("scope = %q, want %q", m.scope(), tc.scope)
			}
		})
	}

	m := newModel(ctx, c, cps)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	if got, want := m.rows[1].summary, "+2 −0 in 1 file"; got != want {
		t.Errorf("turn 0 summary = %q, want %q", got, want)
	}
	if got, want := m.rows[0].files[0].stat, "binary"; got != want {
		t.Errorf("turn 1 stat = %q, want %q", got, want)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("j")})
	if v := m.View(); !strings.Contains(v, "> turn 0") || !strings.Contains(v, "restore a.txt") || !strings.Contains(v, "binary files differ") {
		t.Errorf("view after j:\n%s", v)
	}
}

// TestRunNoTurns: a session without a turn has nothing to pick; Run says
// how to open one before it touches the terminal.
func TestRunNoTurns(t *testing.T) {
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: t.TempDir(), Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, err := Run(ctx, c, nil, nil); ok || err == nil || !strings.Contains(err.Error(), "no turns to rewind to") {
		t.Errorf("Run = %v, %v; want the no-turns error", ok, err)
	}
}
