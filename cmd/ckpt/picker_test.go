package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ckpt/ckpt/controller"
)

// The picker is driven on a real pseudo-terminal: the real binary runs in a
// detached tmux session; keys go in with send-keys and the screen comes
// back with capture-pane.

// screenWait bounds every wait for the screen or an exit: a guard against
// a hang, not a speed test, so generous for a loaded machine.
const screenWait = 2 * time.Minute

// pickerEnv is a workspace with three turns, a store, and a tmux server of
// its own.
type pickerEnv struct {
	t                    *testing.T
	bin, ws, store, sock string
	log                  string
}

func newPickerEnv(t *testing.T, bin string) *pickerEnv {
	t.Helper()
	dir := t.TempDir()
	e := &pickerEnv{t: t, bin: bin, ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "store"),
		sock: filepath.Join(dir, "tmux.sock"), log: filepath.Join(dir, "exit.log")}
	if err := os.Mkdir(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", "alpha v0\n")
	e.ckpt("turn", "make alpha one")
	e.ckpt("capture", "a.txt")
	e.write("a.txt", "alpha v1\n")
	e.ckpt("turn", "add beta file")
	e.ckpt("capture", "b.txt")
	e.write("b.txt", "beta created\n")
	e.ckpt("turn", "rewrite alpha two")
	e.ckpt("capture", "a.txt")
	e.write("a.txt", "alpha v2\nsecond line\n")
	t.Cleanup(func() { _ = e.tmux("kill-server").Run() })
	return e
}

func (e *pickerEnv) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.ws, name), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// read returns a workspace file's content, or "<absent>".
func (e *pickerEnv) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, name))
	if os.IsNotExist(err) {
		return "<absent>"
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// ckpt runs the binary off the terminal and returns its stdout.
func (e *pickerEnv) ckpt(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"--workspace", e.ws, "--store", e.store}, args...)...)
	cmd.Dir = e.ws
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("ckpt %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

func (e *pickerEnv) tmux(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-S", e.sock, "-f", "/dev/null"}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	return cmd
}

// start runs `ckpt rewind` without TURN in a 160x50 tmux session.
func (e *pickerEnv) start() { e.t.Helper(); e.startSized(160, 50) }

// startSized runs `ckpt rewind` without TURN in a tmux session of the size.
func (e *pickerEnv) startSized(cols, rows int) {
	e.t.Helper()
	sh := fmt.Sprintf("%s --workspace %s --store %s rewind; echo EXIT=$? >> %s; sleep 30", shellQuote(e.bin), shellQuote(e.ws), shellQuote(e.store), shellQuote(e.log))
	if out, err := e.tmux("new-session", "-d", "-s", "picker", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), sh).CombinedOutput(); err != nil {
		e.t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
}

func (e *pickerEnv) keys(keys ...string) {
	e.t.Helper()
	if out, err := e.tmux(append([]string{"send-keys", "-t", "picker"}, keys...)...).CombinedOutput(); err != nil {
		e.t.Fatalf("tmux send-keys %v: %v\n%s", keys, err, out)
	}
}

func (e *pickerEnv) screen() string {
	out, _ := e.tmux("capture-pane", "-p", "-t", "picker").Output()
	return string(out)
}

// waitScreen polls the pane until it satisfies ok, failing after a deadline.
func (e *pickerEnv) waitScreen(what string, ok func(screen string) bool) string {
	e.t.Helper()
	deadline := time.Now().Add(screenWait)
	for {
		s := e.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func (e *pickerEnv) waitFor(want string) string {
	e.t.Helper()
	return e.waitScreen(fmt.Sprintf("%q", want), func(s string) bool { return strings.Contains(s, want) })
}

// waitExit waits for the picker process to exit and returns its exit code line.
func (e *pickerEnv) waitExit() string {
	e.t.Helper()
	deadline := time.Now().Add(screenWait)
	for {
		b, _ := os.ReadFile(e.log)
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("picker did not exit; screen:\n%s", e.screen())
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// snapshot is what a cancelled picker must leave alone.
func (e *pickerEnv) snapshot() string {
	return e.read("a.txt") + "|" + e.read("b.txt") + "|" + e.ckpt("log") + "|" + e.ckpt("list")
}

func TestPicker(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed: the picker needs a real terminal to test")
	}
	bin := ckptBinary(t)

	t.Run("navigate_preview_scope_confirm", func(t *testing.T) {
		t.Parallel() // each subtest has its own workspace, store and tmux server
		e := newPickerEnv(t, bin)
		e.start()
		// Newest first: turn 2 is selected and its preview is a rewind to
		// turn 2, which does not touch b.txt.
		s := e.waitFor("Rewind to the start of which turn?")
		for _, want := range []string{"> turn 2", "rewrite alpha two", "add beta file", "make alpha one", "+2 −1 in 1 file", "+1 −0 in 1 file", "-second line", "+alpha v1"} {
			if !strings.Contains(s, want) {
				t.Errorf("first screen lacks %q:\n%s", want, s)
			}
		}
		if strings.Contains(s, "delete b.txt") {
			t.Errorf("preview of turn 2 deletes b.txt:\n%s", s)
		}
		// Down selects turn 1; its preview deletes b.txt, created in turn 1.
		e.keys("Down")
		e.waitFor("> turn 1")
		s = e.waitFor("delete b.txt")
		if !strings.Contains(s, "-beta created") {
			t.Errorf("preview of turn 1 lacks b.txt's diff:\n%s", s)
		}
		e.keys("Enter")
		e.waitFor("conversation only")
		e.keys("Enter") // code + conversation, the first choice
		s = e.waitFor("Yes, rewind")
		if !strings.Contains(s, "> No, keep everything") {
			t.Errorf("confirm screen does not preselect No:\n%s", s)
		}
		e.keys("Down")
		e.waitFor("> Yes, rewind")
		e.keys("Enter")
		if got := e.waitExit(); got != "EXIT=0" {
			t.Fatalf("picker exited %s:\n%s", got, e.screen())
		}
		e.waitFor("rewound code and conversation to turn 1")
		if got := e.read("a.txt"); got != "alpha v1\n" {
			t.Errorf("a.txt = %q, want %q", got, "alpha v1\n")
		}
		if got := e.read("b.txt"); got != "<absent>" {
			t.Errorf("b.txt = %q, want it deleted", got)
		}
		if log := e.ckpt("log"); !strings.Contains(log, "make alpha one") || strings.Contains(log, "add beta file") || strings.Contains(log, "rewrite alpha two") {
			t.Errorf("conversation after rewind to turn 1:\n%s", log)
		}
	})

	// A name with a newline shows quoted, as the CLI prints it, in the
	// step rows, the preview's file list, its diff labels and its plan;
	// never as "new?line.txt".
	t.Run("odd_names", func(t *testing.T) {
		e := newPickerEnv(t, bin)
		e.write("new\nline.txt", "old\n")
		e.ckpt("turn", "odd name")
		e.ckpt("step", "--tool", "Edit")
		e.ckpt("capture", "new\nline.txt")
		e.write("new\nline.txt", "new\n")
		e.start()
		s := e.waitFor(`restore "new\nline.txt"`)
		for _, want := range []string{`Edit ~"new\nline.txt"`, `modified  "new\nline.txt"`, `--- "a/new\nline.txt"`, `+++ "b/new\nline.txt"`} {
			if !strings.Contains(s, want) {
				t.Errorf("picker lacks %s:\n%s", want, s)
			}
		}
		if strings.Contains(s, "new?line") {
			t.Errorf("picker shows a name with its newline replaced:\n%s", s)
		}
		e.keys("q")
		e.waitExit()
	})

	// A turn's steps are rows under it: choosing one goes straight to the
	// confirmation (code only) and rewinds to just before that tool call.
	t.Run("step", func(t *testing.T) {
		t.Parallel() // each subtest has its own workspace, store and tmux server
		e := newPickerEnv(t, bin)
		e.ckpt("step", "--tool", "Edit")
		e.ckpt("capture", "a.txt")
		e.write("a.txt", "alpha v3\n")
		e.ckpt("step", "--tool", "Write")
		e.ckpt("capture", "a.txt", "c.txt")
		e.write("a.txt", "alpha v4\n")
		e.write("c.txt", "new\n")
		e.start()
		s := e.waitFor("> turn 2")
		for _, want := range []string{"2.2", "2.1", "Write ~a.txt +c.txt", "Edit ~a.txt"} {
			if !strings.Contains(s, want) {
				t.Errorf("turn list lacks %q:\n%s", want, s)
			}
		}
		e.keys("Down")
		s = e.waitFor("a code rewind to turn 2 before tool call 2 (2.2) would:")
		for _, want := range []string{"+alpha v3", "delete c.txt"} {
			if !strings.Contains(s, want) {
				t.Errorf("preview of 2.2 lacks %q:\n%s", want, s)
			}
		}
		e.keys("Enter")
		s = e.waitFor("> No, keep everything")
		if !strings.Contains(s, "Rewind code to turn 2 before tool call 2 (2.2)") || strings.Contains(s, "conversation only") {
			t.Errorf("a step's confirmation:\n%s", s)
		}
		e.keys("j")
		e.waitFor("> Yes, rewind")
		e.keys("Enter")
		if got := e.waitExit(); got != "EXIT=0" {
			t.Fatalf("picker exited %s:\n%s", got, e.screen())
		}
		e.waitFor("rewound code to turn 2 before tool call 2 (2.2)")
		if got := e.read("a.txt"); got != "alpha v3\n" {
			t.Errorf("a.txt = %q, want %q", got, "alpha v3\n")
		}
		if got := e.read("c.txt"); got != "<absent>" {
			t.Errorf("c.txt = %q, want it deleted", got)
		}
		if log := e.ckpt("log"); !strings.Contains(log, "rewrite alpha two") {
			t.Errorf("a step rewind cut the conversation:\n%s", log)
		}
	})

	t.Run("code_only", func(t *testing.T) {
		t.Parallel() // each subtest has its own workspace, store and tmux server
		e := newPickerEnv(t, bin)
		e.start()
		e.waitFor("Rewind to the start of which turn?")
		e.keys("j", "j")
		e.waitFor("> turn 0")
		e.keys("Enter")
		e.waitFor("conversation only")
		e.keys("j", "j")
		e.waitFor("> code only")
		e.keys("Enter")
		e.waitFor("> No, keep everything")
		e.keys("j")
		e.waitFor("> Yes, rewind")
		e.keys("Enter")
		if got := e.waitExit(); got != "EXIT=0" {
			t.Fatalf("picker exited %s:\n%s", got, e.screen())
		}
		if got := e.read("a.txt"); got != "alpha v0\n" {
			t.Errorf("a.txt = %q, want %q", got, "alpha v0\n")
		}
		if log := e.ckpt("log"); !strings.Contains(log, "rewrite alpha two") {
			t.Errorf("a code-only rewind cut the conversation:\n%s", log)
		}
	})

	// b.txt, created by turn 1, edited by hand since: a rewind to turn 1
	// would delete it. The picker lists it before the confirmation, and
	// overwriting it takes a second one that says undo brings it back.
	conflictScreens := func(e *pickerEnv) {
		t.Helper()
		e.write("b.txt", "hand edit\n")
		e.start()
		e.waitFor("> turn 2")
		e.keys("Down")
		e.waitFor("> turn 1")
		e.keys("Enter")
		e.waitFor("conversation only")
		e.keys("Enter") // code + conversation
		s := e.waitFor("changed since the agent left it")
		for _, want := range []string{"1 file changed since the agent left it; the rewind would overwrite it:", "    b.txt",
			"A rewind without forcing refuses and changes nothing.", "> No, keep everything", "  Overwrite the changed files…"} {
			if !strings.Contains(s, want) {
				t.Errorf("confirm screen lacks %q:\n%s", want, s)
			}
		}
		if strings.Contains(s, "Yes, rewind") {
			t.Errorf("confirm screen offers a plain rewind over a conflict:\n%s", s)
		}
		e.keys("Down")
		e.waitFor("> Overwrite the changed files…")
		e.keys("Enter")
		s = e.waitFor("brings it back")
		for _, want := range []string{"Overwrite 1 file changed since the agent left it, rewinding to turn 1?", "    b.txt",
			"The current content is stored first: `ckpt undo` brings it back.", "> No, keep everything", "  Yes, overwrite and rewind"} {
			if !strings.Contains(s, want) {
				t.Errorf("force screen lacks %q:\n%s", want, s)
			}
		}
	}

	t.Run("conflicts_force", func(t *testing.T) {
		t.Parallel() // each subtest has its own workspace, store and tmux server
		e := newPickerEnv(t, bin)
		conflictScreens(e)
		e.keys("Down")
		e.waitFor("> Yes, overwrite and rewind")
		e.keys("Enter")
		if got := e.waitExit(); got != "EXIT=0" {
			t.Fatalf("picker exited %s:\n%s", got, e.screen())
		}
		e.waitFor("rewound code and conversation to turn 1")
		if got := e.read("b.txt"); got != "<absent>" {
			t.Errorf("forced rewind left b.txt = %q", got)
		}
		if got := e.read("a.txt"); got != "alpha v1\n" {
			t.Errorf("a.txt = %q, want %q", got, "alpha v1\n")
		}
		e.ckpt("undo")
		if got := e.read("b.txt"); got != "hand edit\n" {
			t.Errorf("undo did not bring the hand edit back: b.txt = %q", got)
		}
	})

	t.Run("conflicts_no_on_force_screen", func(t *testing.T) {
		t.Parallel() // each subtest has its own workspace, store and tmux server
		e := newPickerEnv(t, bin)
		e.write("b.txt", "hand edit\n")
		before := e.snapshot()
		conflictScreens(e)
		e.keys("Enter") // the default: No
		if got := e.waitExit(); got != "EXIT=0" {
			t.Fatalf("picker exited %s:\n%s", got, e.screen())
		}
		e.waitFor("cancelled, nothing changed")
		if after := e.snapshot(); after != before {
			t.Errorf("declined force changed things:\nbefore %q\nafter  %q", before, after)
		}
	})

	// At 60 columns every prompt is still readable whole: prose wraps,
	// list rows and paths are cut with an ellipsis.
	t.Run("narrow_60_columns", func(t *testing.T) {
		t.Parallel() // each subtest has its own workspace, store and tmux server
		e := newPickerEnv(t, bin)
		e.write("b.txt", "hand edit\n")
		before := e.snapshot()
		e.startSized(60, 24)
		check := func(s string, wants ...string) {
			t.Helper()
			for _, l := range strings.Split(s, "\n") {
				if w := len([]rune(l)); w > 60 {
					t.Errorf("line wider than the pane (%d): %q", w, l)
				}
			}
			flat := strings.Join(strings.Fields(s), " ")
			for _, want := range wants {
				if !strings.Contains(flat, want) {
					t.Errorf("screen lacks %q (lines joined):\n%s", want, s)
				}
			}
		}
		s := e.waitFor("> turn 2")
		check(s, "Rewind to the start of which turn?", "↑/↓ j/k move · PgUp/PgDn scroll preview · Enter choose · q/Esc cancel")
		e.keys("Down")
		e.waitFor("> turn 1")
		e.keys("Enter")
		s = e.waitFor("conversation only")
		check(s, "Rewind what to the start of turn 1 (add beta file)?", "q/Esc cancel")
		e.keys("Enter")
		s = e.waitFor("Overwrite the changed")
		check(s, "Rewind code and conversation to the start of turn 1 (add beta file)?",
			"turns 1.. leave the conversation; turn 1's prompt is handed back",
			"1 file changed since the agent left it; the rewind would overwrite it:",
			"`ckpt undo` reverses it.", "q/Esc cancel")
		e.keys("Down")
		e.waitFor("> Overwrite the changed")
		e.keys("Enter")
		s = e.waitFor("Yes, overwrite and rewind")
		check(s, "Overwrite 1 file changed since the agent left it, rewinding to turn 1?",
			"The current content is stored first: `ckpt undo` brings it back.", "Yes, overwrite and rewind")
		e.keys("q")
		if got := e.waitExit(); got != "EXIT=0" {
			t.Fatalf("picker exited %s:\n%s", got, e.screen())
		}
		e.waitFor("cancelled, nothing changed")
		if after := e.snapshot(); after != before {
			t.Errorf("cancelled picker changed things:\nbefore %q\nafter  %q", before, after)
		}
	})

	// Every way out short of "Yes, rewind" changes nothing and says so.
	for _, tc := range []struct {
		name  string
		steps [][2]string // wait for [0], then send key [1]
	}{
		{"q_on_list", [][2]string{{"> turn 2", "q"}}},
		{"esc_on_list", [][2]string{{"> turn 2", "Down"}, {"> turn 1", "Escape"}}},
		{"esc_on_scope", [][2]string{{"> turn 2", "Enter"}, {"conversation only", "Escape"}}},
		{"cancel_in_scope_menu", [][2]string{{"> turn 2", "Enter"}, {"conversation only", "Up"}, {"> code + conversation", "Down"},
			{"> conversation only", "Down"}, {"> code only", "Down"}, {"> cancel", "Enter"}}},
		{"q_on_confirm", [][2]string{{"> turn 2", "Enter"}, {"conversation only", "Enter"}, {"Yes, rewind", "Down"}, {"> Yes, rewind", "q"}}},
		{"enter_on_confirm_default", [][2]string{{"> turn 2", "Down"}, {"> turn 1", "Enter"}, {"conversation only", "Enter"}, {"> No, keep everything", "Enter"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each subtest has its own workspace, store and tmux server
			e := newPickerEnv(t, bin)
			before := e.snapshot()
			e.start()
			for _, st := range tc.steps {
				e.waitFor(st[0])
				e.keys(st[1])
			}
			if got := e.waitExit(); got != "EXIT=0" {
				t.Fatalf("picker exited %s:\n%s", got, e.screen())
			}
			e.waitFor("cancelled, nothing changed")
			if after := e.snapshot(); after != before {
				t.Errorf("cancelled picker changed things:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestPickerModel drives the picker's model without a terminal, so its
// choices are checked even where tmux is missing.
func TestPickerModel(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	step := func(args ...string) {
		t.Helper()
		if code, _, stderr := ckptRun(t, ws, store, args...); code != exitOK {
			t.Fatalf("ckpt %v: exit %d: %s", args, code, stderr)
		}
	}
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one\n")
	step("turn", "first")
	step("capture", filepath.Join(ws, "a.txt"))
	write("one\ntwo\nthree\n")
	step("turn", "second")
	step("capture", filepath.Join(ws, "a.txt"))
	write("\x00binary")

	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{})
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
			m := newPickerModel(ctx, c, cps)
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

	m := newPickerModel(ctx, c, cps)
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
