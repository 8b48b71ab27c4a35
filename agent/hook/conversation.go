package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/gofrs/flock"
)

// What ckpt keeps about Claude Code sessions, in the session index's meta
// table (no schema change; a few short rows per turn):
//
//	agent                 "claude" once a Claude Code prompt opened a turn
//	claude.turn.ROWID     JSON TurnPlace for the turn with that row id
//	claude.at.UUID        the row id of the turn whose prompt followed the
//	                      transcript entry UUID (to find a fork's parent)
//
// and, for a Claude conversation forked by a rewind, one small file naming
// the ckpt session it continues:
//
//	STORE/sessions/NEWID/claude-continues   the ckpt session id, the
//	                                        transcript entry the fork began
//	                                        after, and the Claude session
//	                                        whose transcript holds that
//	                                        entry, one line each
//
// The directory has no index: it is a link (controller.LinkFile), not a
// session of its own, and every store walker passes over it; every hook
// event of NEWID is recorded into the session the file names.
const continuesFile = controller.LinkFile

// TurnPlace is what a Claude Code prompt event says about its turn.
type TurnPlace struct {
	PromptID string `json:"prompt_id,omitempty"`
	// ResumeAt is the uuid of the transcript's last assistant entry before
	// the turn's prompt: `claude --resume S --fork-session
	// --resume-session-at ResumeAt` gives back Claude's conversation as it
	// was when the prompt was sent.
	ResumeAt string `json:"resume_at,omitempty"`
	// Session is S there: the Claude Code session whose transcript holds
	// ResumeAt, when it is not the ckpt session's own id (the prompt came
	// from a fork `ckpt rewind` printed, which records into this session).
	Session string `json:"session,omitempty"`
}

func claudeTurnKey(rowID int64) string { return "claude.turn." + strconv.FormatInt(rowID, 10) }

// recordClaudeTurn stores what the event tells about the turn with row id
// rowID. Nothing to store is not an error.
func recordClaudeTurn(ctx context.Context, x *controller.Controller, rowID int64, t TurnPlace) error {
	if _, err := x.InitMeta(ctx, "agent", "claude"); err != nil {
		return err
	}
	if t == (TurnPlace{}) {
		return nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := x.SetMeta(ctx, claudeTurnKey(rowID), string(b)); err != nil {
		return err
	}
	if t.ResumeAt != "" {
		return x.SetMeta(ctx, "claude.at."+t.ResumeAt, strconv.FormatInt(rowID, 10))
	}
	return nil
}

// MetaReader reads a session's metadata: a controller, or a view of
// another session.
type MetaReader interface {
	Meta(ctx context.Context, key string) (string, error)
}

// LoadTurnPlace returns what was recorded for the turn with row id rowID;
// ok is false when the session is not a Claude Code session.
func LoadTurnPlace(ctx context.Context, x MetaReader, rowID int64) (t TurnPlace, ok bool, err error) {
	if v, err := x.Meta(ctx, "agent"); errors.Is(err, controller.ErrNotFound) || (err == nil && v != "claude") {
		return t, false, nil
	} else if err != nil {
		return t, false, err
	}
	v, err := x.Meta(ctx, claudeTurnKey(rowID))
	if errors.Is(err, controller.ErrNotFound) {
		return t, true, nil
	}
	if err != nil {
		return t, true, err
	}
	return t, true, json.Unmarshal([]byte(v), &t)
}

// pendingPrompt is what adoptFile holds: the session's first prompt.
type pendingPrompt struct {
	PromptID string `json:"prompt_id"`
	Prompt   string `json:"prompt"`
	Tries    int    `json:"tries,omitempty"` // tool calls that found no transcript yet
}

// ContinuedSession returns the ckpt session a Claude Code session id
// continues (see continuesFile), or id itself; the transcript entry the
// fork began after ("" when unknown), and the Claude session whose
// transcript holds it (the ckpt session's id when the file does not say).
func ContinuedSession(store, id string) (session, at, atIn string) {
	b, err := os.ReadFile(filepath.Join(controller.OpenStore(store).SessionDir(id), continuesFile))
	if err != nil {
		return id, "", ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	session = strings.TrimSpace(lines[0])
	if !controller.ValidSession(session) {
		return id, "", ""
	}
	if len(lines) > 1 {
		at = strings.TrimSpace(lines[1])
	}
	atIn = session
	if len(lines) > 2 && controller.ValidSession(strings.TrimSpace(lines[2])) {
		atIn = strings.TrimSpace(lines[2])
	}
	return session, at, atIn
}

// MarkContinues records that Claude Code session newID continues the ckpt
// session id, forked after transcript entry at of Claude session atIn. The
// link directory is as private as a session's.
func MarkContinues(store, newID, id, at, atIn string) error {
	dir := controller.OpenStore(store).SessionDir(newID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, continuesFile), []byte(id+"\n"+at+"\n"+atIn+"\n"), 0o600)
}

// findClaudeParent looks, among the store's other sessions of workspace
// root, for the turn whose prompt followed transcript entry at: a Claude
// Code fork whose conversation ends with that entry continues from there.
// It returns the session and the turn number (in its active history).
func findClaudeParent(ctx context.Context, store, self, root, at string) (string, int, bool) {
	if at == "" {
		return "", 0, false
	}
	ids, err := controller.OpenStore(store).SessionIDs("")
	if err != nil {
		return "", 0, false
	}
	for _, id := range ids {
		if id == self {
			continue
		}
		turn, ok := turnAt(ctx, store, id, root, at)
		if ok {
			return id, turn, true
		}
	}
	return "", 0, false
}

func turnAt(ctx context.Context, store, id, root, at string) (int, bool) {
	x, err := controller.OpenStore(store).View(ctx, id)
	if err != nil {
		return 0, false
	}
	defer x.Close()
	if ws, err := x.Meta(ctx, "workspace"); err != nil || ws != root {
		return 0, false
	}
	v, err := x.Meta(ctx, "claude.at."+at)
	if err != nil {
		return 0, false
	}
	rowID, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	cps, err := x.Turns(ctx)
	if err != nil {
		return 0, false
	}
	for _, cp := range cps {
		if cp.ID == rowID {
			return cp.Turn, true
		}
	}
	return 0, false
}

// forkFromParent makes the new Claude Code session sid a ckpt fork of the
// session its transcript continues, when one is found: the fork's turns are
// the parent's before the turn that followed the fork point. It reports
// whether it forked.
func forkFromParent(ctx context.Context, conv agent.Conversation, store, root, sid, transcript string) (bool, error) {
	at, err := conv.ResumePoint(transcript)
	if err != nil || at == "" {
		return false, nil
	}
	parent, turn, ok := findClaudeParent(ctx, store, sid, root, at)
	if !ok {
		return false, nil
	}
	if _, err := forkAt(ctx, store, root, parent, turn, sid); err != nil {
		if errors.Is(err, controller.ErrSessionExists) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// adoptFile marks a Claude Code session whose first prompt came before its
// transcript was written (Claude writes a forked conversation only after
// that prompt's hook): the first tool call looks again, and adoptFork makes
// the session a ckpt fork if it continues a recorded conversation. It
// holds a pendingPrompt as JSON.
const adoptFile = "claude-adopt"

// adoptPending reports whether session sid has a first prompt adoptFork
// has yet to look at.
func adoptPending(store, sid string) bool {
	_, err := os.Stat(filepath.Join(controller.OpenStore(store).SessionDir(sid), adoptFile))
	return err == nil
}

// adoptFork runs before a tool call of session sid (a Claude Code session
// ckpt opened at its first prompt, marked by adoptFile). When the
// transcript now shows the prompt came after an assistant entry that a
// turn of another session of the workspace followed, the session, which
// then holds that one prompt's turn and nothing else, is replaced by a
// ckpt fork of that session at that turn, and the prompt's turn is opened
// again in it. It reports whether it did.
func adoptFork(ctx context.Context, conv agent.Conversation, store, sid, transcript string, say func(string, ...any)) bool {
	dir := controller.OpenStore(store).SessionDir(sid)
	mark := filepath.Join(dir, adoptFile)
	if _, err := os.Stat(mark); err != nil {
		return false
	}
	lock := flock.New(filepath.Join(dir, "hook.lock"))
	if err := lock.Lock(); err != nil {
		return false
	}
	defer lock.Unlock()
	b, err := os.ReadFile(mark)
	if err != nil {
		return false // another tool call's hook did it
	}
	var pp pendingPrompt
	if json.Unmarshal(b, &pp) != nil || pp.PromptID == "" {
		os.Remove(mark)
		return false
	}
	// Claude writes its transcript behind the events: give it a moment,
	// while the prompt's entries are not there at all.
	var at string
	found, written := false, false
	for try := 0; try < 10 && !written; try++ {
		if try > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		var err error
		if at, found, written, err = conv.ForkPoint(transcript, pp.PromptID, pp.Prompt); err != nil {
			break
		}
	}
	if !written {
		// Not written yet: the next tool call looks again, up to twice.
		pp.Tries++
		if b, err := json.Marshal(pp); err == nil && pp.Tries < 2 {
			atomicfile.WriteFile(mark, b, 0o644)
		} else {
			os.Remove(mark)
		}
		return false
	}
	if !found {
		os.Remove(mark) // the prompt is there but not as ckpt saw it
		return false
	}
	os.Remove(mark)
	if at == "" {
		return false // a new conversation
	}
	root, prompt, ok := soleEmptyTurn(ctx, store, sid)
	if !ok {
		return false
	}
	parent, turn, ok := findClaudeParent(ctx, store, sid, root, at)
	if !ok {
		return false
	}
	if err := controller.OpenStore(store).DiscardIndex(sid); err != nil {
		say("ckpt: hook: warning: replace session %s by a fork: %s; recording a new session", sid, msg.OneLine(err))
		return false
	}
	if _, err := forkAt(ctx, store, root, parent, turn, sid); err != nil {
		say("ckpt: hook: warning: fork of session %s at turn %d: %s; recording a new session", parent, turn, msg.OneLine(err))
		return false
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: root, Session: sid, Store: store, NoAutoRetention: true})
	if err != nil {
		return false
	}
	defer c.Close()
	res, err := c.BeginTurn(ctx, prompt, controller.TurnOptions{})
	if err != nil {
		say("ckpt: hook: warning: reopen the prompt's turn in the fork: %s", msg.OneLine(err))
		return false
	}
	recordClaudeTurn(ctx, c, res.ID, TurnPlace{PromptID: pp.PromptID, ResumeAt: at})
	return true
}

// soleEmptyTurn returns the workspace of session sid and the prompt of
// its one turn, when that turn is all it holds: no file recorded, no
// operation.
func soleEmptyTurn(ctx context.Context, store, sid string) (root, prompt string, ok bool) {
	x, err := controller.OpenStore(store).View(ctx, sid)
	if err != nil {
		return "", "", false
	}
	defer x.Close()
	root, _ = x.Meta(ctx, "workspace")
	cps, err1 := x.Turns(ctx)
	ops, err2 := x.Operations(ctx)
	if err1 != nil || err2 != nil || len(cps) != 1 || ops != 0 || root == "" {
		return "", "", false
	}
	cp, err := x.Turn(ctx, cps[0].Turn)
	if err != nil || len(cp.Files) != 0 {
		return "", "", false
	}
	return root, cp.Prompt, true
}

// forkAt forks session parent at turn into session to.
func forkAt(ctx context.Context, store, root, parent string, turn int, to string) (controller.ForkResult, error) {
	c, err := controller.Open(ctx, controller.Options{Workspace: root, Session: parent, Store: store, NoAutoRetention: true})
	if err != nil {
		return controller.ForkResult{}, err
	}
	defer c.Close()
	return c.Fork(ctx, turn, controller.ForkOptions{To: to})
}
