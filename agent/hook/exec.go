package hook

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/gofrs/flock"
)

// hookRun executes what an event asks for, on the controller of its
// session: captures, and the turn a capture or shell command needs.
type hookRun struct {
	hd      *Handler
	c       *controller.Controller
	session string
	strict  bool
}

// capture records the paths of one event into the open turn, in the step
// of tool call step (opened by the capture's own index transaction:
// CaptureOptions.OpenStep), as one durable step (one blob commit, one
// index commit: Controller.Capture), opening a turn first when there is
// none, and returns what failed. A path the design refuses to record
// (outside the workspace, inside .git) is skipped with a warning and is
// never a failure.
func (h hookRun) capture(ctx context.Context, step controller.StepOptions, paths []string) []string {
	captureAll := func(ps []string) []error {
		_, errs := h.c.Capture(ctx, controller.CaptureOptions{Paths: ps, OpenStep: &step})
		return errs
	}
	errs := captureAll(paths)
	var again []int
	for i, err := range errs {
		if errors.Is(err, controller.ErrNoOpenTurn) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		err := h.ensureTurn(ctx)
		retry := make([]string, len(again))
		for k, i := range again {
			retry[k] = paths[i]
		}
		var errs2 []error
		if err == nil {
			errs2 = captureAll(retry)
		}
		for k, i := range again {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = errs2[k]
			}
		}
	}
	var fails []string
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, controller.ErrOutsideWorkspace) || errors.Is(err, controller.ErrVCSDir):
			h.hd.say("ckpt: hook: warning: skipped %s: %s", paths[i], msg.OneLine(err))
		default:
			fails = append(fails, "capture "+msg.OneLine(err))
		}
	}
	return fails
}

// beginStep opens the step of one tool call that names no path in the
// open turn, if there is one (key: the agent's id of the call, so every
// hook of one call shares a step). A step that cannot be opened is a
// warning. A tool call that names paths opens its step with their
// capture (capture).
func (h hookRun) beginStep(ctx context.Context, key, tool string) {
	_, err := h.c.BeginStep(ctx, controller.StepOptions{Key: key, Tool: tool})
	if err != nil && !errors.Is(err, controller.ErrNoOpenTurn) {
		h.hd.say("ckpt: hook: warning: step of %s: %s", tool, msg.OneLine(err))
	}
}

// relabel gives the open turn, when it is still labelled from, the prompt
// label reads. It never fails the hook: a turn left with its label is
// still a checkpoint.
func (h hookRun) relabel(ctx context.Context, from string, label func() string) {
	open, err := h.c.Turn(ctx, -1)
	if err != nil || open.Prompt != from {
		return
	}
	if p := label(); p != "" {
		if _, err := h.c.BeginTurn(ctx, p, controller.TurnOptions{Relabel: from}); err != nil {
			h.hd.say("ckpt: hook: warning: label the turn: %s", msg.OneLine(err))
		}
	}
}

// ensureTurn opens a turn when the session has none (see
// TurnOptions.Ensure: parallel tool hooks open one turn, not two).
func (h hookRun) ensureTurn(ctx context.Context) error {
	res, err := h.c.BeginTurn(ctx, noPromptLabel, controller.TurnOptions{Ensure: true})
	if err != nil {
		return err
	}
	if res.Warning != "" {
		h.hd.say("ckpt: warning: %s", res.Warning)
	}
	return nil
}

// ensureManifest runs before a shell command. Outside scan mode there is
// nothing to record (a shell command's writes are not known in advance).
// In scan mode every turn takes its manifest when it opens (the
// UserPromptSubmit that opened it), so this only opens a turn when there
// is none; a turn opened before scan mode was turned on keeps having no
// manifest, which it says once per shell command.
func (h hookRun) ensureManifest(ctx context.Context) *agent.Failure {
	scan, err := h.c.Meta(ctx, "scan")
	if err != nil {
		return &agent.Failure{Msg: "scan setting: " + msg.OneLine(err), Block: h.strict}
	}
	if scan != "on" {
		return nil
	}
	cp, err := h.c.Turn(ctx, -1)
	if errors.Is(err, controller.ErrNoOpenTurn) {
		if err := h.ensureTurn(ctx); err != nil {
			return &agent.Failure{Msg: "open turn: " + msg.OneLine(err), Block: h.strict}
		}
		return nil
	}
	if err != nil {
		return &agent.Failure{Msg: msg.OneLine(err), Block: h.strict}
	}
	if !cp.Scanned {
		h.hd.say("ckpt: hook: warning: turn %d opened without a workspace manifest (scan mode came on later, or its scan was refused); this shell command's changes are rewound from the next prompt on", cp.Turn)
	}
	return nil
}

// resumeLabel labels the turn a SessionStart opens to record the workspace
// before the agent's first action.
const resumeLabel = "(session start: workspace before the agent acts)"

// resumeCheckpoint runs at SessionStart (startup, resume or fork). In scan
// mode, a session that has no workspace manifest to fall back on (no turn
// yet, or an open turn without one) opens a turn that records it, so a
// code rewind can always reach the state before the agent's first action;
// a session whose open turn has a manifest already needs none. Outside
// scan mode there is nothing to record before a tool call names a path.
func (h hookRun) resumeCheckpoint(ctx context.Context) *agent.Failure {
	scan, err := h.c.Meta(ctx, "scan")
	if err != nil {
		return &agent.Failure{Msg: "scan setting: " + msg.OneLine(err)}
	}
	if scan != "on" {
		return nil
	}
	res, err := h.c.BeginTurn(ctx, resumeLabel, controller.TurnOptions{EnsureScanned: true})
	if err != nil {
		return &agent.Failure{Msg: "open turn: " + msg.OneLine(err)}
	}
	if res.Warning != "" {
		h.hd.say("ckpt: warning: %s", res.Warning)
	}
	return nil
}

// turnFailedFile marks a session whose last prompt's hook could not open
// its turn; it holds a failedTurn as JSON. Until that turn opens, nothing
// the agent does in answer to the prompt may land in the turn before it:
// the next tool call's hook opens the turn (openFailedTurn) or records
// nothing.
const turnFailedFile = "turn-failed"

// failedTurn is the prompt whose turn did not open.
type failedTurn struct {
	Prompt string    `json:"prompt"`
	Claude TurnPlace `json:"claude"`
	Agent  string    `json:"agent"`
}

// markTurnFailed records that the turn of prompt t could not open; a
// failure to record it is returned for the hook's message.
func markTurnFailed(store, session string, t failedTurn) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(controller.OpenStore(store).SessionDir(session), turnFailedFile), b, 0o600)
}

// clearTurnFailed forgets a failed turn: a later prompt's turn opened.
func clearTurnFailed(store, session string) {
	os.Remove(filepath.Join(controller.OpenStore(store).SessionDir(session), turnFailedFile))
}

// openFailedTurn runs before a tool call is recorded. When the session's
// last prompt could not open its turn (turnFailedFile), it opens it now,
// under the session's hook lock so parallel tool calls open it once; if it
// still cannot, the tool call is recorded nowhere and the failure says so
// (blocking with --strict): never into the turn of an earlier prompt.
func (h hookRun) openFailedTurn(ctx context.Context) *agent.Failure {
	dir := h.hd.store().SessionDir(h.session)
	mark := filepath.Join(dir, turnFailedFile)
	fi, err := os.Stat(mark)
	if err != nil {
		return nil // the common case: one stat
	}
	lock := flock.New(filepath.Join(dir, "hook.lock"))
	if err := lock.Lock(); err != nil {
		return &agent.Failure{Msg: "the current prompt has no turn (its hook could not open one), and the session's lock failed: " + msg.OneLine(err) + "; nothing recorded", Block: h.strict, Show: true}
	}
	defer lock.Unlock()
	b, err := os.ReadFile(mark)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // another tool call's hook opened it
	}
	if open, oerr := h.c.Turn(ctx, -1); err == nil && oerr == nil && open.Time.After(fi.ModTime()) {
		os.Remove(mark) // a turn opened since (`ckpt turn`, a later prompt): the agent is in it
		return nil
	}
	var t failedTurn
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil {
		return &agent.Failure{Msg: "the current prompt has no turn (its hook could not open one): " + msg.OneLine(err) + "; nothing recorded", Block: h.strict, Show: true}
	}
	res, err := h.c.BeginTurn(ctx, t.Prompt, controller.TurnOptions{})
	if err != nil {
		return &agent.Failure{Msg: "the current prompt has no turn: open turn: " + msg.OneLine(err) + "; nothing recorded", Block: h.strict, Show: true}
	}
	os.Remove(mark)
	if res.Warning != "" {
		h.hd.say("ckpt: warning: %s", res.Warning)
	}
	if ag, _ := agent.Lookup(t.Agent); isConversation(ag) {
		if err := recordClaudeTurn(ctx, h.c, res.ID, t.Claude); err != nil {
			h.hd.say("ckpt: hook: warning: record the turn's place in Claude's conversation: %s", msg.OneLine(err))
		}
	}
	return nil
}
