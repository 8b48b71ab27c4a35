package hook

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlanResume: the command that forks Claude's conversation at a turn
// cuts it just before the turn's prompt when ckpt recorded where it began,
// starts a new conversation for turn 0, and otherwise forks the whole
// conversation (inexact); each plan has a fresh v4 session id.
func TestPlanResume(t *testing.T) {
	const sid = "11111111-1111-4111-8111-111111111111"
	r := PlanResume(sid, 2, TurnPlace{ResumeAt: "a1"}, "it's two", []string{"--model", "opus"})
	want := []string{"claude", "--model", "opus", "--resume", sid, "--fork-session", "--session-id", r.Session, "--resume-session-at", "a1", "-p", "it's two"}
	if strings.Join(r.Argv, "\x00") != strings.Join(want, "\x00") || !r.Exact {
		t.Errorf("argv %q exact %v; want %q", r.Argv, r.Exact, want)
	}
	if !strings.HasSuffix(r.Command, `-p 'it'\''s two'`) || r.Then != "claude --model opus --resume "+r.Session {
		t.Errorf("command %s; then %s", r.Command, r.Then)
	}
	if len(r.Session) != 36 || r.Session[14] != '4' || r.Session == PlanResume(sid, 2, TurnPlace{}, "x", nil).Session {
		t.Errorf("session %q is not a fresh v4 UUID", r.Session)
	}
	r0 := PlanResume(sid, 0, TurnPlace{}, "first", nil)
	if strings.Join(r0.Argv, " ") != "claude --session-id "+r0.Session+" -p first" || !r0.Exact {
		t.Errorf("turn 0: %q", r0.Argv)
	}
	rn := PlanResume(sid, 3, TurnPlace{}, "later", nil)
	if strings.Join(rn.Argv, " ") != "claude --resume "+sid+" --fork-session --session-id "+rn.Session || rn.Exact {
		t.Errorf("no record: %q exact %v", rn.Argv, rn.Exact)
	}
}

// TestResumeWriteText: an exact resume says it resends the prompt, an
// inexact one that the prompt is to paste; both end with the command and
// how to continue.
func TestResumeWriteText(t *testing.T) {
	const sid = "11111111-1111-4111-8111-111111111111"
	exact := PlanResume(sid, 2, TurnPlace{ResumeAt: "a1"}, "two", nil)
	inexact := PlanResume(sid, 3, TurnPlace{}, "three", nil)
	for _, tc := range []struct {
		r     Resume
		turn  int
		first string
	}{
		{exact, 2, "Claude Code's conversation at turn 2 (a fork: its original transcript is left as it is), resending the prompt:"},
		{inexact, 3, "ckpt has no record of where turn 3 began in Claude's transcript (installed later?); this forks the whole conversation, paste the prompt above:"},
	} {
		var b bytes.Buffer
		tc.r.WriteText(&b, tc.turn)
		if got, want := b.String(), tc.first+"\n  "+tc.r.Command+"\nthen continue it with: "+tc.r.Then+"\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
