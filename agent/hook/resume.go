package hook

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
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

// Resume is how to get Claude Code's own conversation back to the start
// of a rewound turn: a fork of the Claude session, so the original
// transcript is never changed.
type Resume struct {
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

// WriteText says for people how the resume gives Claude Code's
// conversation back at turn: the command that forks it (exact or, without
// a record of the turn's place, the whole conversation), and the command
// that continues the fork.
func (r Resume) WriteText(w io.Writer, turn int) {
	if r.Exact {
		fmt.Fprintf(w, "Claude Code's conversation at turn %d (a fork: its original transcript is left as it is), resending the prompt:\n", turn)
	} else {
		fmt.Fprintf(w, "ckpt has no record of where turn %d began in Claude's transcript (installed later?); this forks the whole conversation, paste the prompt above:\n", turn)
	}
	fmt.Fprintf(w, "  %s\nthen continue it with: %s\n", r.Command, r.Then)
}

// PlanResume returns how to resume the Claude Code conversation of ckpt
// session sid at turn, given what was recorded for it: a fork of the
// Claude session whose transcript holds the turn's start (t.Session, else
// sid itself). extra are further arguments for claude, placed before the
// others. It changes nothing.
func PlanResume(sid string, turn int, t TurnPlace, prompt string, extra []string) Resume {
	if t.Session != "" {
		sid = t.Session
	}
	r := Resume{Session: newUUID(), ResumeAt: t.ResumeAt, Exact: true, from: sid}
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

// ResumeOptions are how RewindPlan settles Claude's side of a rewind.
type ResumeOptions struct {
	// DryRun: the rewind changes nothing, so neither does the plan.
	DryRun bool
	// Run: the plan runs the fork after the rewind (`ckpt rewind
	// --resume-claude`); Bin is the claude binary ("": claude on $PATH).
	Run bool
	Bin string
	// Interactive says the fork can be continued on a terminal: an
	// inexact plan can run only then.
	Interactive bool
	// Extra are further arguments for claude.
	Extra []string
	// Say receives warnings, one line each; nil discards them.
	Say func(format string, args ...any)
}

// RewindPlan is how a conversation rewind of a Claude Code session gives
// Claude's own conversation back, settled before the rewind changes
// anything.
type RewindPlan struct {
	Resume Resume
	o      ResumeOptions
	// unmark removes the fork's link (see MarkContinues), when the rewind
	// it was made for did not happen.
	unmark func()
}

// ErrNotClaude is PlanRewind's error for Run with a session or a rewind
// that has no Claude Code conversation to resume.
var ErrNotClaude = errors.New("not a Claude Code session with a conversation rewind; nothing rewound")

// PlanRewind settles, before a rewind of the session of c (in store) to
// turn, the command that forks Claude Code's conversation there: nil for
// a session that is not a Claude Code session, or a rewind that leaves
// the conversation alone (conversation false). Everything that could
// keep the plan from running is checked first (no claude binary, no
// terminal for an inexact plan), so that a rewind whose Claude resume
// cannot be done changes nothing. Unless o.DryRun, the fork's session id
// is marked as continuing this ckpt session, so its hook events open the
// rewound turn's number again here; Cancel undoes that.
func PlanRewind(ctx context.Context, store string, c *controller.Controller, turn int, conversation bool, o ResumeOptions) (*RewindPlan, error) {
	session := c.Session()
	turnErr := errors.New("not a conversation rewind")
	if conversation {
		var cp controller.Checkpoint
		if cp, turnErr = c.Turn(ctx, turn); turnErr == nil {
			ct, isClaude, err := LoadTurnPlace(ctx, c, cp.ID)
			if err != nil && o.Say != nil {
				o.Say("ckpt: warning: Claude Code record of turn %d: %s", turn, msg.OneLine(err))
			}
			if isClaude {
				return planRewind(ctx, store, session, turn, ct, cp.Prompt, o)
			}
		}
	}
	if o.Run && !errors.Is(turnErr, controller.ErrNoTurn) {
		return nil, fmt.Errorf("--resume-claude: session %s is %w", session, ErrNotClaude)
	}
	return nil, nil
}

func planRewind(ctx context.Context, store, session string, turn int, ct TurnPlace, prompt string, o ResumeOptions) (*RewindPlan, error) {
	p := &RewindPlan{Resume: PlanResume(session, turn, ct, prompt, o.Extra), o: o, unmark: func() {}}
	if o.Run {
		if !p.Resume.Exact && !o.Interactive {
			return nil, errors.New("--resume-claude: without a record of the turn's place in the transcript, Claude can only be resumed on a terminal; nothing rewound")
		}
		if p.o.Bin == "" {
			var err error
			if p.o.Bin, err = exec.LookPath("claude"); err != nil {
				return nil, fmt.Errorf("--resume-claude: no claude on $PATH (set $CKPT_CLAUDE_BIN); nothing rewound: %w", err)
			}
		}
	}
	if o.DryRun {
		return p, nil
	}
	st := controller.OpenStore(store)
	if err := st.Continue(ctx, p.Resume.Session, session, p.Resume.ResumeAt, p.Resume.from); err != nil {
		return nil, fmt.Errorf("prepare Claude's fork: %w; nothing rewound", err)
	}
	// Forget what the fork continues when the rewind did not happen.
	p.unmark = func() { st.Continue(context.WithoutCancel(ctx), p.Resume.Session, "", "", "") }
	return p, nil
}

// Cancel undoes what PlanRewind prepared, for a rewind that did not
// happen.
func (p *RewindPlan) Cancel() { p.unmark() }

// Runs says whether Run runs the fork (ResumeOptions.Run).
func (p *RewindPlan) Runs() bool { return p.o.Run }

// Run runs the fork after the rewind, when the plan says to: claude
// resends the turn's prompt in the fork (stdin, when a terminal, and the
// output streams are claude's), then, on a terminal, this process becomes
// `claude --resume` on the fork (it returns only on failure).
func (p *RewindPlan) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	if !p.o.Run {
		return nil
	}
	r := p.Resume
	cmd := exec.CommandContext(ctx, p.o.Bin, r.Argv[1:]...)
	if f, ok := stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("claude %s: %w", strings.Join(r.Argv[1:][:min(len(r.Argv)-1, 2)], " "), err)
	}
	if r.Exact && p.o.Interactive {
		// The fork, to go on with on this terminal: ckpt hands the
		// terminal to Claude Code, becoming it, so that its keys and
		// signals are Claude's alone.
		args := append(append([]string(nil), p.o.Extra...), "--resume", r.Session)
		if err := execClaude(p.o.Bin, args); err != nil {
			return fmt.Errorf("claude --resume %s: %w", r.Session, err)
		}
	}
	return nil
}
