package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/quote"
)

// terminalQueries are the requests a program sends a terminal to learn
// about it, each of which makes it wait for a reply: OSC 10/11 (the
// foreground and background colours), DSR 6 (the cursor position), DA1
// and DA2 (the device attributes), DECRQM (whether a mode is set).
var terminalQueries = map[string]string{
	"OSC 10 foreground query": "\x1b]10;?",
	"OSC 11 background query": "\x1b]11;?",
	"cursor position report":  "\x1b[6n",
	"primary device attrs":    "\x1b[c",
	"secondary device attrs":  "\x1b[>c",
	"mode query (DECRQM)":     "$p",
}

// safeBuffer is a bytes.Buffer a command writes while the test reads it.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNoTerminalQuery: on a terminal that never answers, ckpt writes no
// request that waits for an answer, so nothing stalls (termenv gives up on
// an unanswered colour query after 5 s): not the picker before its first
// frame, and not a plain command. The terminal is script(1)'s
// pseudo-terminal, whose input is a pipe the test holds and never answers
// on; everything ckpt writes to the terminal comes back on script's
// stdout, and TERM names a terminal that could answer.
func TestNoTerminalQuery(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("script -q -c is util-linux's")
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) not installed")
	}
	bin := ckptBinary(t)
	e := newPickerEnv(t, bin)

	// onTerminal starts args on the pseudo-terminal and returns what it
	// writes there, the pipe that is the terminal's keyboard, and a wait
	// for its exit.
	onTerminal := func(t *testing.T, args string) (*safeBuffer, io.WriteCloser, func()) {
		t.Helper()
		sh := "stty cols 120 rows 40; exec " + quote.Shell(bin) + " --workspace " + quote.Shell(e.ws) + " --store " + quote.Shell(e.store) + " " + args
		cmd := exec.Command("script", "-q", "-c", sh, "/dev/null")
		cmd.Dir = e.ws
		cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=", "CI=")
		out := &safeBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		keys, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		wait := func() {
			t.Helper()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("script: %v\n%q", err, out.String())
				}
			case <-time.After(screenWait):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("ckpt %s did not exit; it wrote %q", args, out.String())
			}
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
			}
		})
		return out, keys, wait
	}
	noQuery := func(t *testing.T, out string) {
		t.Helper()
		for name, q := range terminalQueries {
			if strings.Contains(out, q) {
				t.Errorf("ckpt sent the terminal a %s (%q); it wrote %q", name, q, out)
			}
		}
	}

	t.Run("picker", func(t *testing.T) {
		out, keys, wait := onTerminal(t, "rewind")
		deadline := time.Now().Add(screenWait)
		for !strings.Contains(out.String(), "Rewind to the start of which turn?") {
			if time.Now().After(deadline) {
				t.Fatalf("no first frame; ckpt wrote %q", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		first := out.String()
		if !strings.Contains(first, "rewrite alpha two") {
			t.Errorf("first frame lacks the newest turn: %q", first)
		}
		// The preview's removed lines are red: the colour profile came
		// from the TERM ckpt was started with.
		if !strings.Contains(first, "\x1b[31m-second line") {
			t.Errorf("first frame's preview is not coloured for %s: %q", "xterm-256color", first)
		}
		noQuery(t, first)
		if _, err := io.WriteString(keys, "q"); err != nil {
			t.Fatal(err)
		}
		wait()
		keys.Close()
		if got := out.String(); !strings.Contains(got, "cancelled, nothing changed") {
			t.Errorf("q did not cancel; ckpt wrote %q", got)
		}
		noQuery(t, out.String())
	})

	t.Run("list", func(t *testing.T) {
		out, keys, wait := onTerminal(t, "list")
		wait()
		keys.Close()
		if got := out.String(); !strings.Contains(got, "rewrite alpha two") {
			t.Errorf("list wrote %q", got)
		}
		noQuery(t, out.String())
	})
}
