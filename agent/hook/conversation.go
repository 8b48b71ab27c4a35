package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
)

// What ckpt keeps about Claude Code sessions, in the session index's meta
// table (a few short rows per turn):
//
//	agent                 "claude" once a Claude Code prompt opened a turn
//	claude.turn.ROWID     JSON TurnPlace for the turn with that row id
//	claude.at.UUID        the row id of the turn whose prompt followed the
//	                      transcript entry UUID (to find a fork's parent)
//	claude.adopt          the session's first prompt (a pendingPrompt),
//	                      while the first tool call has yet to look whether
//	                      the conversation continues one ckpt recorded
//	                      (adoptFork)
//
// A Claude conversation forked by a rewind records into the ckpt session it
// continues: the controller keeps that (Store.Continue) and Resolve resolves
// the fork's session id to that session (Location.Continued).

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
	if v, err := x.Meta(ctx, "agent"); err != nil || v != "claude" {
		if err := x.SetMeta(ctx, "agent", "claude"); err != nil {
			return err
		}
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

// pendingPrompt is what the adoptKey row holds: the session's first
// prompt.
type pendingPrompt struct {
	PromptID string `json:"prompt_id"`
	Prompt   string `json:"prompt"`
	Tries    int    `json:"tries,omitempty"` // tool calls that found no transcript yet
}

// findClaudeParent looks, among the store's other sessions of workspace
// root, for the turn whose prompt followed transcript entry at: a Claude
// Code fork whose conversation ends with that entry continues from there.
// It returns the session and the turn number (in its active history).
func findClaudeParent(ctx context.Context, store, self, root, at string) (string, int, bool) {
	if at == "" {
		return "", 0, false
	}
	st := controller.OpenStore(store)
	defer st.Close()
	ss, err := st.Sessions(ctx, root)
	if err != nil {
		return "", 0, false
	}
	for _, s := range ss {
		if s.ID == self {
			continue
		}
		turn, ok := turnAt(ctx, st, s.ID, root, at)
		if ok {
			return s.ID, turn, true
		}
	}
	return "", 0, false
}

// turnAt returns the turn of session id, of workspace root, whose prompt
// followed transcript entry at, as the session's hooks recorded it.
func turnAt(ctx context.Context, st *controller.Store, id, root, at string) (int, bool) {
	// Open fails for a session of another workspace (or none).
	x, err := st.Open(ctx, controller.Options{Workspace: root, Session: id, NoCreate: true, NoAutoRetention: true})
	if err != nil {
		return 0, false
	}
	defer x.Close()
	v, err := x.Meta(ctx, "claude.at."+at)
	if err != nil {
		return 0, false
	}
	rowID, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	cps, _, err := x.Checkpoints(ctx, controller.ListOptions{NoFiles: true})
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

// adoptKey is the meta row that marks a Claude Code session whose first
// prompt came before its transcript was written (Claude writes a forked
// conversation only after that prompt's hook): the first tool call looks
// again, and adoptFork makes the session a ckpt fork if it continues a
// recorded conversation. It holds a pendingPrompt as JSON.
const adoptKey = "claude.adopt"

// legacyAdoptFile is where an older ckpt kept the adoptKey row: a file
// of the session's directory holding the same JSON.
const legacyAdoptFile = "claude-adopt"

// adoptPending reports whether session c has a first prompt adoptFork has
// yet to look at. A first prompt an older ckpt left in legacyAdoptFile is
// recorded as the row first, and the file, which the index then proves,
// removed.
func adoptPending(ctx context.Context, c *controller.Controller) bool {
	if _, err := c.Meta(ctx, adoptKey); err == nil {
		return true
	}
	file := filepath.Join(c.Store().SessionDir(c.Session()), legacyAdoptFile)
	b, err := os.ReadFile(file)
	if err != nil {
		return false // the common case: one stat
	}
	if json.Valid(b) && c.SetMeta(ctx, adoptKey, string(b)) != nil {
		return false // the file stays for the next tool call
	}
	os.Remove(file)
	return json.Valid(b)
}

// adoptFork runs before a tool call of session sid (a Claude Code session
// ckpt opened at its first prompt, marked by adoptKey). When the
// transcript now shows the prompt came after an assistant entry that a
// turn of another session of the workspace followed, the session, which
// then holds that one prompt's turn and nothing else, is replaced by a
// ckpt fork of that session at that turn, and the prompt's turn is opened
// again in it (Store.Adopt, under the session's rewind lock: parallel tool
// calls adopt once). It reports whether it did.
func adoptFork(ctx context.Context, conv agent.Conversation, store, sid, transcript string, say func(string, ...any)) bool {
	var pp pendingPrompt
	var at, ws string
	res, err := controller.OpenStore(store).Adopt(ctx, sid, adoptKey, func(v, root string) (keep, parent string, turn int) {
		ws = root
		if json.Unmarshal([]byte(v), &pp) != nil || pp.PromptID == "" {
			return "", "", 0
		}
		// Claude writes its transcript behind the events: give it a
		// moment, while the prompt's entries are not there at all.
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
				return string(b), "", 0
			}
			return "", "", 0
		}
		if !found || at == "" {
			return "", "", 0 // not the prompt as ckpt saw it, or a new conversation
		}
		parent, turn, _ = findClaudeParent(ctx, store, sid, root, at)
		return "", parent, turn
	})
	if err != nil {
		say("ckpt: hook: warning: replace session %s by a fork: %s; recording a new session", sid, msg.OneLine(err))
		return false
	}
	if !res.Opened {
		return false
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: sid, Store: store, NoAutoRetention: true})
	if err != nil {
		return false
	}
	defer c.Close()
	recordClaudeTurn(ctx, c, res.ID, TurnPlace{PromptID: pp.PromptID, ResumeAt: at})
	return true
}

// forkAt forks session parent at turn into session to.
func forkAt(ctx context.Context, store, root, parent string, turn int, to string) (controller.Result, error) {
	c, err := controller.Open(ctx, controller.Options{Workspace: root, Session: parent, Store: store, NoAutoRetention: true})
	if err != nil {
		return controller.Result{}, err
	}
	defer c.Close()
	return c.Fork(ctx, turn, controller.ForkOptions{To: to})
}
