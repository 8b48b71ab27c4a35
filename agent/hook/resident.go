package hook

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
)

// The resident hook server as a process of the ckpt executable (`ckpt
// serve --hooks`): what starts it, stops it and says what is wrong with
// it.

// strangerWarning is the warning for a listener at the hook server's
// address that could not prove it is ckpt's.
func strangerWarning(addr string) string {
	return fmt.Sprintf("something that cannot prove it is this ckpt's hook server listens at %s (another program, or another user's); ckpt sent it nothing, but Claude Code's tool-call hooks post there: this prompt's turn records the whole workspace instead; stop that program, or choose another port: ckpt install claude --http --port N", addr)
}

// serverStartWait is how long EnsureServer waits for a server it started
// to answer: a Go process's start on a loaded machine can take seconds,
// and until it answers the prompt's turn falls back to the whole
// workspace.
const serverStartWait = 10 * time.Second

// EnsureServer makes sure the store's hook server (if one is configured)
// runs and proves it is this store's before the agent's tool calls post
// to it: what the command hooks `ckpt install claude --http` keeps
// (session start, prompt) do. Nothing listening: it starts `exe serve
// --hooks` (exe: the ckpt executable) in the background and waits for its
// proof. It returns what is wrong when tool calls will not reach a proven
// server ("" when they will), or, dir given, when no install's token is
// good for dir: the prompt's turn then records the whole workspace.
func EnsureServer(store, exe, dir string) (problem string) {
	cfg, ok, err := LoadConfig(store)
	if err != nil {
		return msg.OneLine(err) + "; tool calls are not captured, this prompt's turn records the whole workspace instead"
	}
	if !ok {
		return ""
	}
	if dir != "" {
		covered := false
		if root, err := controller.WorkspaceRoot(dir); err == nil {
			for _, t := range cfg.Tokens {
				covered = covered || t.Covers(root)
			}
		}
		if !covered {
			return fmt.Sprintf("no ckpt install --http is for %s, so the hook server refuses its tool calls; this prompt's turn records the whole workspace instead (run ckpt install claude --http there)", dir)
		}
	}
	_, st := Probe(store, cfg, 500*time.Millisecond)
	if st == Down {
		start := func() string {
			if err := StartDetached(store, exe, ServerLockFile, ServerLogFile, "serve", "--hooks", "--idle", "2h"); err != nil {
				return "start the hook server: " + msg.OneLine(err) + "; this prompt's turn records the whole workspace instead (ckpt serve --hooks)"
			}
			return ""
		}
		if p := start(); p != "" {
			return p
		}
		// The lock may have been held by a server shutting down, which
		// started nothing: once it is free, start one (once more). Each
		// start gets serverStartWait to answer.
		restarted := false
		started := time.Now()
		for st == Down && time.Since(started) < serverStartWait {
			time.Sleep(30 * time.Millisecond)
			_, st = Probe(store, cfg, 500*time.Millisecond)
			if st == Down && time.Since(started) >= 150*time.Millisecond && !Running(store, ServerLockFile) {
				if restarted {
					break // it exited: its log says why
				}
				restarted = true
				if p := start(); p != "" {
					return p
				}
				started = time.Now()
			}
		}
	}
	switch st {
	case Up:
		return ""
	case Stranger:
		return strangerWarning(cfg.Addr)
	}
	return "the hook server did not start (see " + filepath.Join(store, ServerLogFile) + "); this prompt's turn records the whole workspace instead"
}

// ServerProblem says what is wrong with the store's hook server when
// Claude Code's settings for project (its .claude/settings.local.json, or
// ~/.claude/settings.json) send tool calls to it: "" when nothing is, or
// when they do not; down says nothing listens there.
func ServerProblem(store, project string) (problem string, down bool) {
	var files []string
	if project != "" && filepath.IsAbs(project) {
		files = append(files, filepath.Join(project, ".claude", "settings.local.json"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	cfg, ok, err := LoadConfig(store)
	for _, f := range files {
		b, rerr := os.ReadFile(f)
		if rerr != nil || !bytes.Contains(b, []byte(`/hook/claude`)) {
			continue
		}
		switch {
		case err != nil:
			return "hook server not configured: " + msg.OneLine(err), false
		case !ok || !bytes.Contains(b, []byte(`"http://`+cfg.Addr+`/hook/claude`)):
			continue
		}
		switch _, st := Probe(store, cfg, 300*time.Millisecond); st {
		case Down:
			return "hook server down, edits not captured (ckpt serve --hooks)", true
		case Stranger:
			return "hook port " + cfg.Addr + " held by a program that is not ckpt, tool calls go to it", false
		}
		return "", false
	}
	return "", false
}

// ServerWarning is ServerProblem worded as a warning for people (`ckpt
// status`), or "" when there is no problem.
func ServerWarning(store, project string) string {
	switch p, down := ServerProblem(store, project); {
	case down:
		return "Claude Code's tool calls go to ckpt's hook server, which is not running: edits are not captured (ckpt serve --hooks, or the next prompt starts it)"
	case p != "":
		return "Claude Code's tool calls go to ckpt's hook server: " + p
	}
	return ""
}

// StopServer stops the store's hook server listening at old.Addr, if it
// proves it is there (Stop), and waits (a few seconds at most) until it
// has let go of the lock that lets the hooks start another.
func StopServer(store string, old Config) {
	if !Stop(store, old) {
		return
	}
	for try := 0; try < 100 && Running(store, ServerLockFile); try++ {
		time.Sleep(50 * time.Millisecond)
	}
}
