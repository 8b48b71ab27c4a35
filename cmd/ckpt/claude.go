package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/gofrs/flock"
)

// What ckpt keeps about Claude Code sessions, in the session index's meta
// table (no schema change; a few short rows per turn):
//
//	agent                 "claude" once a Claude Code prompt opened a turn
//	claude.turn.ROWID     JSON claudeTurn for the turn with that row id
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

// claudeTurn is what a Claude Code prompt event says about its turn.
type claudeTurn struct {
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
func recordClaudeTurn(ctx context.Context, x *controller.Controller, rowID int64, t claudeTurn) error {
	if _, err := x.InitMeta(ctx, "agent", "claude"); err != nil {
		return err
	}
	if t == (claudeTurn{}) {
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

// metaReader reads a session's metadata: a controller, or a view of
// another session.
type metaReader interface {
	Meta(ctx context.Context, key string) (string, error)
}

// loadClaudeTurn returns what was recorded for the turn with row id rowID;
// ok is false when the session is not a Claude Code session.
func loadClaudeTurn(ctx context.Context, x metaReader, rowID int64) (t claudeTurn, ok bool, err error) {
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

// maxTranscriptTail bounds how much of a transcript's end is read to find
// its last assistant entry.
const maxTranscriptTail = 8 << 20

// lastAssistantUUID returns the uuid of the last assistant entry of the
// main conversation in Claude Code's transcript at path (JSON lines), or ""
// when there is none. The transcript is only read, never changed; only its
// last maxTranscriptTail bytes are looked at.
func lastAssistantUUID(path string) (string, error) {
	if path == "" || !filepath.IsAbs(path) {
		return "", nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // nothing written yet: the first prompt
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	var r io.Reader = f
	if fi.Size() > maxTranscriptTail {
		if _, err := f.Seek(fi.Size()-maxTranscriptTail, io.SeekStart); err != nil {
			return "", err
		}
		br := bufio.NewReader(f)
		if _, err := br.ReadBytes('\n'); err != nil { // a cut line
			return "", nil
		}
		r = br
	}
	last, _, err := lastAssistantIn(r, nil)
	return last, err
}

// lastAssistantIn scans transcript lines for the last assistant entry of
// the main conversation (not a sidechain) and returns its uuid. With
// prompt set, it returns instead the last assistant entry before the last
// user entry that is that prompt (its promptId and its text), and found
// says whether there is one. (Claude Code 2.1.330 gives the entries a fork
// copies the new prompt's promptId; 2.1.197 keeps the old ones.)
func lastAssistantIn(r io.Reader, prompt *pendingPrompt) (last string, found bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxTranscriptTail)
	before := ""
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"assistant"`)) && (prompt == nil || !bytes.Contains(line, []byte(prompt.PromptID))) {
			continue
		}
		var e struct {
			Type        string `json:"type"`
			UUID        string `json:"uuid"`
			IsSidechain bool   `json:"isSidechain"`
			PromptID    string `json:"promptId"`
			Message     struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &e) != nil || e.IsSidechain {
			continue
		}
		if prompt != nil && e.Type == "user" && e.PromptID == prompt.PromptID && promptText(e.Message.Content) == prompt.Prompt {
			before, found = last, true
		}
		if e.Type == "assistant" && e.UUID != "" {
			last = e.UUID
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	if prompt != nil {
		return before, found, nil
	}
	return last, true, nil
}

// promptText is the text of a user message's content: a string, or its
// text blocks joined ("" for tool results).
func promptText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// pendingPrompt is what adoptFile holds: the session's first prompt.
type pendingPrompt struct {
	PromptID string `json:"prompt_id"`
	Prompt   string `json:"prompt"`
	Tries    int    `json:"tries,omitempty"` // tool calls that found no transcript yet
}

// readTail reads the file at path, or its last max bytes from the first
// whole line in them.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() <= max {
		return io.ReadAll(io.LimitReader(f, max))
	}
	if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b, err
}

// continuedSession returns the ckpt session a Claude Code session id
// continues (see continuesFile), or id itself; the transcript entry the
// fork began after ("" when unknown), and the Claude session whose
// transcript holds it (the ckpt session's id when the file does not say).
func continuedSession(store, id string) (session, at, atIn string) {
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

// markContinues records that Claude Code session newID continues the ckpt
// session id, forked after transcript entry at of Claude session atIn. The
// link directory is as private as a session's.
func markContinues(store, newID, id, at, atIn string) error {
	dir := controller.OpenStore(store).SessionDir(newID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, continuesFile), []byte(id+"\n"+at+"\n"+atIn+"\n"), 0o600)
}

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
func planClaudeResume(sid string, turn int, t claudeTurn, prompt string, extra []string) claudeResume {
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
		q[i] = shellQuote(a)
	}
	r.Command = strings.Join(q, " ")
	then := append(append([]string{"claude"}, extra...), "--resume", r.Session)
	for i := range then {
		then[i] = shellQuote(then[i])
	}
	r.Then = strings.Join(then, " ")
	return r
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
func forkFromParent(ctx context.Context, store, root, sid, transcript string) (bool, error) {
	at, err := lastAssistantUUID(transcript)
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

// claudePlan is how a conversation rewind of a Claude Code session gives
// Claude's own conversation back, settled before the rewind changes
// anything.
type claudePlan struct {
	r     claudeResume
	run   bool     // --resume-claude: run r.Argv after the rewind
	bin   string   // the claude binary, when run
	extra []string // further arguments for claude
	// unmark removes the fork's link (see markContinues), when the rewind
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
func (a *app) planClaude(turn int, ct claudeTurn, prompt string, dryRun, run bool, extra []string) (claudePlan, error) {
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
	if err := markContinues(a.store, p.r.Session, a.session, p.r.ResumeAt, p.r.from); err != nil {
		return p, fmt.Errorf("prepare Claude's fork: %w; nothing rewound", err)
	}
	dir := controller.OpenStore(a.store).SessionDir(p.r.Session)
	p.unmark = func() {
		os.Remove(filepath.Join(dir, continuesFile))
		os.Remove(dir)
	}
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
func adoptFork(ctx context.Context, store, sid, transcript string, say func(string, ...any)) bool {
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
		data, err := readTail(transcript, maxTranscriptTail)
		if err != nil {
			continue
		}
		written = bytes.Contains(data, []byte(pp.PromptID))
		if at, found, err = lastAssistantIn(bytes.NewReader(data), &pp); err != nil {
			break
		}
	}
	if !written {
		// Not written yet: the next tool call looks again, up to twice.
		pp.Tries++
		if b, err := json.Marshal(pp); err == nil && pp.Tries < 2 {
			writeFileAtomic(mark, b, 0o644)
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
	x, err := controller.OpenStore(store).View(ctx, sid)
	if err != nil {
		return false
	}
	root, _ := x.Meta(ctx, "workspace")
	cps, err1 := x.Turns(ctx)
	ops, err2 := x.Operations(ctx)
	var prompt string
	ok := err1 == nil && err2 == nil && len(cps) == 1 && ops == 0 && root != ""
	if ok {
		var cp controller.Checkpoint
		if cp, err = x.Turn(ctx, cps[0].Turn); err == nil && len(cp.Files) == 0 {
			prompt = cp.Prompt
		} else {
			ok = false
		}
	}
	x.Close()
	if !ok {
		return false
	}
	parent, turn, ok := findClaudeParent(ctx, store, sid, root, at)
	if !ok {
		return false
	}
	if err := controller.OpenStore(store).DiscardIndex(sid); err != nil {
		say("ckpt: hook: warning: replace session %s by a fork: %s; recording a new session", sid, oneLine(err))
		return false
	}
	if _, err := forkAt(ctx, store, root, parent, turn, sid); err != nil {
		say("ckpt: hook: warning: fork of session %s at turn %d: %s; recording a new session", parent, turn, oneLine(err))
		return false
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: root, Session: sid, Store: store, NoAutoRetention: true})
	if err != nil {
		return false
	}
	defer c.Close()
	res, err := c.BeginTurn(ctx, prompt, controller.TurnOptions{})
	if err != nil {
		say("ckpt: hook: warning: reopen the prompt's turn in the fork: %s", oneLine(err))
		return false
	}
	recordClaudeTurn(ctx, c, res.ID, claudeTurn{PromptID: pp.PromptID, ResumeAt: at})
	return true
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
