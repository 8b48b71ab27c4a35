package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/quote"
)

// newUUID returns a random version-4 UUID, the session id form Claude Code
// accepts for --session-id.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// claudeResume is how to get Claude Code's own conversation back to the
// start of a rewound turn: a fork of the Claude session, so the original
// transcript is never changed.
type claudeResume struct {
	// Session is the new Claude Code session id; its hook events are
	// recorded into this ckpt session, whose next turn is the rewound one.
	Session string `json:"session"`
	// ResumeAt is the transcript entry the fork ends with ("" for turn 0,
	// or when ckpt has no record of where the turn began).
	ResumeAt string `json:"resume_at"`
	// Argv is the command that forks Claude's conversation and resends the
	// turn's prompt (print mode); Then continues the fork interactively.
	Argv    []string `json:"argv"`
	Command string   `json:"command"`
	Then    string   `json:"then"`
	// Exact is false when ckpt has no record of the turn's place in the
	// transcript: Argv then resumes the whole conversation, and the prompt
	// is for the user to paste.
	Exact bool   `json:"exact"`
	from  string // the Claude session Argv forks
}

// planClaudeResume returns how to resume the Claude Code conversation of
// ckpt session sid at turn, given what was recorded for it: a fork of the
// Claude session whose transcript holds the turn's start (t.Session, else
// sid itself). extra are further arguments for claude, placed before the
// others.
func planClaudeResume(sid string, turn int, t hook.TurnPlace, prompt string, extra []string) claudeResume {
	if t.Session != "" {
		sid = t.Session
	}
	r := claudeResume{Session: newUUID(), ResumeAt: t.ResumeAt, Exact: true, from: sid}
	switch {
	case t.ResumeAt != "":
		r.Argv = []string{"claude", "--resume", sid, "--fork-session", "--session-id", r.Session,
			"--resume-session-at", t.ResumeAt, "-p", prompt}
	case turn == 0:
		// Nothing came before the first prompt: a new conversation is
		// Claude's state at turn 0.
		r.Argv = []string{"claude", "--session-id", r.Session, "-p", prompt}
	default:
		r.Exact = false
		r.Argv = []string{"claude", "--resume", sid, "--fork-session", "--session-id", r.Session}
	}
	r.Argv = append(append([]string{"claude"}, extra...), r.Argv[1:]...)
	q := make([]string, len(r.Argv))
	for i, a := range r.Argv {
		q[i] = quote.Shell(a)
	}
	r.Command = strings.Join(q, " ")
	then := append(append([]string{"claude"}, extra...), "--resume", r.Session)
	for i := range then {
		then[i] = quote.Shell(then[i])
	}
	r.Then = strings.Join(then, " ")
	return r
}

// claudePlan is how a conversation rewind of a Claude Code session gives
// Claude's own conversation back, settled before the rewind changes
// anything.
type claudePlan struct {
	r     claudeResume
	run   bool     // --resume-claude: run r.Argv after the rewind
	bin   string   // the claude binary, when run
	extra []string // further arguments for claude
	// unmark forgets what the fork continues (Store.Continue), when the rewind
	// it was made for did not happen.
	unmark func()
}

// planClaude plans, before a conversation rewind to turn of this session
// (whose record is ct and prompt prompt), the command that forks Claude's
// conversation there. Everything that could keep it from running is
// checked first (a dry run, no claude binary, no terminal for an inexact
// plan), so that a rewind whose Claude resume cannot be done changes
// nothing. Unless dryRun, the fork's session id is marked as continuing
// this ckpt session, so its hook events open the rewound turn's number
// again here.
func (a *app) planClaude(ctx context.Context, turn int, ct hook.TurnPlace, prompt string, dryRun, run bool, extra []string) (claudePlan, error) {
	p := claudePlan{r: planClaudeResume(a.session, turn, ct, prompt, extra), run: run, extra: extra, unmark: func() {}}
	if run {
		if dryRun {
			return p, usagef("--resume-claude with --dry-run: nothing would be rewound, so nothing to resume")
		}
		if !p.r.Exact && !a.interactive() {
			return p, errors.New("--resume-claude: without a record of the turn's place in the transcript, Claude can only be resumed on a terminal; nothing rewound")
		}
		p.bin = os.Getenv("CKPT_CLAUDE_BIN")
		if p.bin == "" {
			var err error
			if p.bin, err = exec.LookPath("claude"); err != nil {
				return p, fmt.Errorf("--resume-claude: no claude on $PATH (set $CKPT_CLAUDE_BIN); nothing rewound: %w", err)
			}
		}
	}
	if dryRun {
		return p, nil
	}
	st := controller.OpenStore(a.store)
	if err := st.Continue(ctx, p.r.Session, a.session, p.r.ResumeAt, p.r.from); err != nil {
		return p, fmt.Errorf("prepare Claude's fork: %w; nothing rewound", err)
	}
	p.unmark = func() { st.Continue(context.WithoutCancel(ctx), p.r.Session, "", "", "") }
	return p, nil
}

// claudeRewound reports a conversation rewind of a Claude Code session
// with the command p planned, and runs it when p says to.
func (a *app) claudeRewound(ctx context.Context, res controller.Result, p claudePlan) error {
	r := p.r
	// Paths the rewind skipped make it exit 1, once the command that
	// gives Claude's conversation back is printed (and run).
	skipped := incomplete(res, "rewind")
	if a.json {
		j := resultJSON(res)
		j.ClaudeResume = &r
		if err := a.printJSON(j); err != nil {
			return err
		}
	} else {
		if err := a.printResult(res, "rewind"); err != nil && !errors.Is(err, errIncomplete) {
			return err
		}
		if r.Exact {
			a.say("Claude Code's conversation at turn %d (a fork: its original transcript is left as it is), resending the prompt:", res.Turn)
		} else {
			a.say("ckpt has no record of where turn %d began in Claude's transcript (installed later?); this forks the whole conversation, paste the prompt above:", res.Turn)
		}
		a.say("  %s", r.Command)
		a.say("then continue it with: %s", r.Then)
	}
	if !p.run {
		return skipped
	}
	runClaude := func(args []string) error {
		cmd := exec.CommandContext(ctx, p.bin, args...)
		if f, ok := a.stdin.(*os.File); ok {
			cmd.Stdin = f
		}
		cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("claude %s: %w", strings.Join(args[:min(len(args), 2)], " "), err)
		}
		return nil
	}
	if err := runClaude(r.Argv[1:]); err != nil {
		return err
	}
	if r.Exact && a.interactive() {
		// The fork, to go on with on this terminal: ckpt hands the
		// terminal to Claude Code, becoming it, so that its keys and
		// signals are Claude's alone. Paths the rewind skipped were
		// listed above.
		args := append(append([]string(nil), p.extra...), "--resume", r.Session)
		if err := execClaude(p.bin, args); err != nil {
			return fmt.Errorf("claude --resume %s: %w", r.Session, err)
		}
	}
	return skipped
}
