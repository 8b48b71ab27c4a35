package wire

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ckpt/ckpt/controller"
)

// timeFormat is how a turn's, a step's and a message's time is written:
// RFC 3339 in UTC, to the second.
const timeFormat = time.RFC3339

func stamp(t time.Time) string { return t.UTC().Format(timeFormat) }

// PathBytes is the lossless JSON form of a path that is not valid UTF-8
// (encoding/json would replace such bytes with U+FFFD): its exact bytes,
// for a path_bytes field beside the lossy path. Nil, and so omitted, for
// every UTF-8 path.
func PathBytes(p string) []byte {
	if utf8.ValidString(p) {
		return nil
	}
	return []byte(p)
}

// pathBytesMap is the document-level path_bytes of a document whose paths
// sit in plain string lists: each path that is not valid UTF-8, as its
// JSON string, mapped to its exact bytes. Nil when every path is UTF-8.
func pathBytesMap(lists ...[]string) map[string][]byte {
	var m map[string][]byte
	for _, l := range lists {
		for _, p := range l {
			if b := PathBytes(p); b != nil {
				if m == nil {
					m = map[string][]byte{}
				}
				m[strings.ToValidUTF8(p, "\uFFFD")] = b
			}
		}
	}
	return m
}

// nonNil returns s, or an empty slice for nil.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Checkpoint is one turn of the active history: `ckpt list --json`'s
// elements, GET /api/checkpoints and the MCP tool list_checkpoints.
type Checkpoint struct {
	// Turn is the turn number, from 0.
	Turn int `json:"turn" jsonschema:"the turn number, from 0"`
	// Time is when the turn opened (RFC 3339, UTC).
	Time string `json:"time" jsonschema:"when the turn opened (RFC 3339, UTC)"`
	// Prompt is the user prompt that opened the turn.
	Prompt string `json:"prompt" jsonschema:"the user prompt that opened the turn"`
	// Files are the files the turn captured, sorted by path, with what
	// the turn did to each.
	Files []File `json:"files" jsonschema:"the files the turn touched, with what it did to each"`
	// Pinned: the turn is exempt from retention.
	Pinned bool `json:"pinned" jsonschema:"exempt from retention"`
	// Label is the name given when pinning; omitted when there is none.
	Label string `json:"label,omitempty" jsonschema:"the name given when pinned"`
	// Pruned: retention dropped the turn's file snapshots, so only a
	// conversation rewind reaches it.
	Pruned bool `json:"pruned" jsonschema:"retention dropped its file snapshots: only a conversation rewind reaches it"`
	// Steps are the turn's tool calls, numbered from 1: a code rewind can
	// go to just before one (TURN.STEP). Left out when not asked for
	// (`ckpt list` without --steps).
	Steps []Step `json:"steps,omitzero" jsonschema:"the turn's tool calls, numbered from 1: rewind with step goes to just before one"`
}

// File is one path a turn captured.
type File struct {
	// Path is workspace-relative and slash-separated.
	Path string `json:"path" jsonschema:"workspace-relative, slash-separated"`
	// PathBytes is Path's exact bytes when they are not UTF-8.
	PathBytes []byte `json:"path_bytes,omitempty" jsonschema:"the path's exact bytes (base64) when it is not UTF-8"`
	// Kind is what the turn did to it: "created", "modified", "deleted"
	// or "unchanged" (captured, but the turn ended with the bytes and
	// mode it began with).
	Kind string `json:"kind" jsonschema:"what the turn did to it: created, modified, deleted or unchanged"`
}

// Step is one tool call of a turn.
type Step struct {
	// Step is its number within the turn, from 1.
	Step int `json:"step" jsonschema:"the step number within its turn, from 1"`
	// Time is when the tool call began (RFC 3339, UTC).
	Time string `json:"time" jsonschema:"when the tool call began (RFC 3339, UTC)"`
	// Tool is the tool's name, when the agent gave it.
	Tool string `json:"tool" jsonschema:"the tool's name, when known"`
	// Key is the agent's id of the tool call, when it gave one.
	Key string `json:"key" jsonschema:"the agent's id of the tool call, when known"`
	// Files are the paths the tool call touched first, sorted by path.
	Files []StepFile `json:"files" jsonschema:"the files the tool call touched first"`
}

// StepFile is a path a tool call touched first.
type StepFile struct {
	// Path is workspace-relative and slash-separated.
	Path string `json:"path" jsonschema:"workspace-relative, slash-separated"`
	// PathBytes is Path's exact bytes when they are not UTF-8.
	PathBytes []byte `json:"path_bytes,omitempty" jsonschema:"the path's exact bytes (base64) when it is not UTF-8"`
	// Existed: the file existed just before the tool call (false: the
	// call created it).
	Existed bool `json:"existed" jsonschema:"the file existed just before the tool call (false: the call created it)"`
}

// NewCheckpoint is cp, with its steps when it was listed with them
// (controller.ListOptions.Steps; else Steps is nil, so left out).
func NewCheckpoint(cp controller.Checkpoint) Checkpoint {
	out := Checkpoint{Turn: cp.Turn, Time: stamp(cp.Time), Prompt: cp.Prompt, Files: make([]File, len(cp.Files)),
		Pinned: cp.Pinned, Label: cp.Label, Pruned: cp.Pruned}
	for i, f := range cp.Files {
		out.Files[i] = File{Path: f.Path, PathBytes: PathBytes(f.Path), Kind: string(cp.Changes[i].Kind)}
	}
	if cp.Steps != nil {
		out.Steps = NewSteps(cp.Steps)
	}
	return out
}

// NewSteps is one turn's steps, in order; never nil.
func NewSteps(steps []controller.Step) []Step {
	out := make([]Step, len(steps))
	for i, st := range steps {
		out[i] = Step{Step: st.Number, Time: stamp(st.Time), Tool: st.Tool, Key: st.Key, Files: make([]StepFile, len(st.Files))}
		for j, f := range st.Files {
			out[i].Files[j] = StepFile{Path: f.Path, PathBytes: PathBytes(f.Path), Existed: f.Content != nil}
		}
	}
	return out
}

// NewCheckpoints is cps (see NewCheckpoint); never nil.
func NewCheckpoints(cps []controller.Checkpoint) []Checkpoint {
	out := make([]Checkpoint, len(cps))
	for i, cp := range cps {
		out[i] = NewCheckpoint(cp)
	}
	return out
}

// Skip is a path a rewind or diff leaves as it is.
type Skip struct {
	Path string `json:"path" jsonschema:"workspace-relative, slash-separated"`
	// Reason says why, for people.
	Reason string `json:"reason" jsonschema:"why it is left alone"`
}

func newSkips(s []controller.Skip) []Skip {
	out := make([]Skip, len(s))
	for i, k := range s {
		out[i] = Skip{Path: k.Path, Reason: k.Reason}
	}
	return out
}

// Result is what a rewind, revert, summarize, undo or redo did (or, for a
// dry run or a refusal on conflicts, would do): `ckpt rewind --json` and
// the others, POST /api/rewind, /api/undo, /api/redo, /api/summarize, and
// the MCP tools rewind, undo and redo.
type Result struct {
	// Turn is the target turn.
	Turn int `json:"turn" jsonschema:"the target turn"`
	// Step is the target step of the turn; omitted for the turn's start.
	Step int `json:"step,omitempty" jsonschema:"the target step of the turn (0 or absent: its start)"`
	// Scope is "code", "conversation" or "both".
	Scope string `json:"scope" jsonschema:"code, conversation or both"`
	// Restored are the files written back (content and mode).
	Restored []string `json:"restored" jsonschema:"files written back (content and mode)"`
	// Deleted are the files removed: they did not exist at the target.
	Deleted []string `json:"deleted" jsonschema:"files removed: they did not exist at the target"`
	// Skipped are paths left as they are, and why.
	Skipped []Skip `json:"skipped" jsonschema:"files left alone, and why"`
	// Conflicts are the files (or, for an undo or redo, turns) changed
	// since: the op was refused unless forced.
	Conflicts []string `json:"conflicts" jsonschema:"files (or turns) changed since: refused unless force"`
	// Prompt is the prompt a conversation rewind hands back, to edit and
	// resend.
	Prompt string `json:"prompt" jsonschema:"the prompt handed back by a conversation rewind, to edit and resend"`
	// DryRun: nothing was changed; the result is the plan.
	DryRun bool `json:"dry_run" jsonschema:"nothing was changed: this is the plan"`
	// Changed is false when there was nothing to do, or the op was
	// refused.
	Changed bool `json:"changed" jsonschema:"false when there was nothing to do, or the call was refused"`
	// NotRecorded are paths a rewind of named paths (ckpt rewind --only)
	// was given that ckpt has no record of from the target on.
	NotRecorded []string `json:"not_recorded" jsonschema:"paths named for a rewind that ckpt has no record of from the target on"`
	// Of says, for an undo or redo, which op it reversed or re-applied.
	Of string `json:"of,omitempty" jsonschema:"for an undo or redo: the op it reversed or re-applied"`
	// PathBytes maps each path above that is not UTF-8 (as its JSON
	// string) to its exact bytes.
	PathBytes map[string][]byte `json:"path_bytes,omitempty" jsonschema:"each path above that is not UTF-8, mapped to its exact bytes (base64)"`
}

// Counts says what the result does to files, for people: "2 restored,
// 1 deleted", and ", 1 skipped" when paths were left alone.
func (r Result) Counts() string {
	s := strconv.Itoa(len(r.Restored)) + " restored, " + strconv.Itoa(len(r.Deleted)) + " deleted"
	if len(r.Skipped) > 0 {
		s += ", " + strconv.Itoa(len(r.Skipped)) + " skipped"
	}
	return s
}

// NewResult is r as the front-ends emit it.
func NewResult(r controller.Result) Result {
	out := Result{Turn: r.Turn, Step: r.Step, Scope: string(r.Scope), Restored: nonNil(r.Restored), Deleted: nonNil(r.Deleted),
		Skipped: newSkips(r.Skipped), Conflicts: nonNil(r.Conflicts), Prompt: r.Prompt, DryRun: r.DryRun, Changed: r.Changed,
		NotRecorded: nonNil(r.NotRecorded), Of: r.Of}
	skipped := make([]string, len(r.Skipped))
	for i, s := range r.Skipped {
		skipped[i] = s.Path
	}
	out.PathBytes = pathBytesMap(out.Restored, out.Deleted, skipped, out.Conflicts, out.NotRecorded)
	return out
}

// Diff is what a code rewind to a turn (or a step) would change:
// `ckpt diff --json`, GET /api/diff and the MCP tool show_diff.
type Diff struct {
	// Turn and Step are the target; Step is omitted for the turn's start.
	Turn int `json:"turn" jsonschema:"the target turn"`
	Step int `json:"step,omitempty" jsonschema:"the target step of the turn (0 or absent: its start)"`
	// Files say what the rewind would do to each file.
	Files []FileDiff `json:"files" jsonschema:"what a code rewind would do to each file: restore or delete, with the unified diff"`
	// Skipped are paths a rewind would leave as they are, and why.
	Skipped []Skip `json:"skipped" jsonschema:"files a rewind would leave alone, and why"`
	// PathBytes maps each path above that is not UTF-8 (as its JSON
	// string) to its exact bytes.
	PathBytes map[string][]byte `json:"path_bytes,omitempty" jsonschema:"each path above that is not UTF-8, mapped to its exact bytes (base64)"`
}

// FileDiff is what a code rewind would do to one file.
type FileDiff struct {
	Path string `json:"path" jsonschema:"workspace-relative, slash-separated"`
	// Action is "restore" or "delete" (the file did not exist then).
	Action string `json:"action" jsonschema:"restore, or delete: the file did not exist then"`
	// Unified is the unified diff from the current content (a/) to the
	// content at the target (b/); empty for a binary or oversized file,
	// for which Note says why.
	Unified string `json:"unified" jsonschema:"the unified diff from the current content (a/) to the content at the target (b/)"`
	Note    string `json:"note,omitempty" jsonschema:"why there is no unified diff"`
	// OldMode and NewMode are the file modes now and at the target, as
	// git writes them ("100644"); omitted for an absent side.
	OldMode string `json:"old_mode,omitempty" jsonschema:"the file mode now, as git writes it"`
	NewMode string `json:"new_mode,omitempty" jsonschema:"the file mode at the target, as git writes it"`
}

// Header returns the git-style extended header lines for the file:
// "new file mode", "deleted file mode", or "old mode"/"new mode" when
// only the mode or also the mode changed; empty when the mode is the same.
func (d FileDiff) Header() string {
	switch {
	case d.OldMode == "" && d.NewMode != "":
		return "new file mode " + d.NewMode + "\n"
	case d.OldMode != "" && d.NewMode == "":
		return "deleted file mode " + d.OldMode + "\n"
	case d.OldMode != d.NewMode:
		return "old mode " + d.OldMode + "\nnew mode " + d.NewMode + "\n"
	}
	return ""
}

// NewDiff is the diff of a code rewind to pt (Controller.Diff's
// results).
func NewDiff(pt controller.Target, diffs []controller.FileDiff, skipped []controller.Skip) Diff {
	out := Diff{Turn: pt.Turn, Step: pt.Step, Files: make([]FileDiff, len(diffs)), Skipped: newSkips(skipped)}
	paths := make([]string, 0, len(diffs)+len(skipped))
	for i, d := range diffs {
		out.Files[i] = FileDiff{Path: d.Path, Action: d.Action, Unified: d.Unified, Note: d.Note, OldMode: d.OldMode, NewMode: d.NewMode}
		paths = append(paths, d.Path)
	}
	for _, s := range skipped {
		paths = append(paths, s.Path)
	}
	out.PathBytes = pathBytesMap(paths)
	return out
}

// Message is one message of the active conversation: `ckpt log --json`
// and GET /api/conversation.
type Message struct {
	// ID is the message's id, unique in the session.
	ID int64 `json:"id"`
	// Turn is the turn it belongs to.
	Turn int `json:"turn"`
	// Role is "user", "assistant", "tool" or "system".
	Role string `json:"role"`
	Text string `json:"text"`
	// Time is when it was recorded (RFC 3339, UTC).
	Time string `json:"time"`
}

// NewMessages is the conversation msgs; never nil.
func NewMessages(msgs []controller.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{ID: m.ID, Turn: m.Turn, Role: m.Role, Text: m.Text, Time: stamp(m.Time)}
	}
	return out
}

// Fork is what a fork made: `ckpt fork --json` and POST /api/fork.
type Fork struct {
	// Session is the new session's id.
	Session string `json:"session"`
	// From is the session it was forked from.
	From string `json:"from"`
	// Turn is the turn it was forked before: the fork's next turn.
	Turn int `json:"turn"`
	// Prompt is Turn's prompt, handed back to edit and resend.
	Prompt string `json:"prompt"`
	// Restored and Deleted are the files a fork with restore put back.
	Restored []string `json:"restored"`
	Deleted  []string `json:"deleted"`
}

// NewFork is the fork res (Controller.Fork's) of session from before turn.
func NewFork(from string, turn int, res controller.Result) Fork {
	return Fork{Session: res.Session, From: from, Turn: turn, Prompt: res.Prompt,
		Restored: nonNil(res.Restored), Deleted: nonNil(res.Deleted)}
}

// HistoryEntry is one op of the session's journal (newest first in every
// front-end): `ckpt history --json`, GET /api/history and the MCP tool
// history.
type HistoryEntry struct {
	// ID names the op (for undo or redo of a given op).
	ID int64 `json:"id" jsonschema:"the op's id, for undo or redo with op"`
	// Time is when the op ran (UTC).
	Time time.Time `json:"time" jsonschema:"when the op ran (RFC 3339, UTC)"`
	// Kind is "rewind", "revert", "summarize", "undo" or "redo".
	Kind string `json:"kind" jsonschema:"rewind, revert, summarize, undo or redo"`
	// Scope is the base op's scope: "code", "conversation" or "both".
	Scope string `json:"scope" jsonschema:"code, conversation or both"`
	// Turn is the target turn of the base rewind or summarize.
	Turn int `json:"turn" jsonschema:"the target turn of the base rewind or summarize"`
	// Step is the target step of a rewind to a step; omitted otherwise.
	Step int `json:"step,omitempty" jsonschema:"the target step of a rewind to a step"`
	// Undoes is, for an undo or redo, the id of the op it acts on; 0
	// otherwise.
	Undoes int64 `json:"undoes" jsonschema:"for an undo or redo: the id of the op it acts on"`
	// State is "done", "undone" or "planned" (begun, not finished).
	State string `json:"state" jsonschema:"done, undone or planned"`
	// UndoneBy is the id of the undo that reversed it; 0 if none.
	UndoneBy int64 `json:"undone_by" jsonschema:"the id of the undo that reversed it (0: none)"`
	// Paths are the files it rewrote; Files gives each one's state
	// before and after.
	Paths []string      `json:"paths" jsonschema:"the files it rewrote"`
	Files []HistoryFile `json:"files" jsonschema:"each file's state before and after the op"`
	// HiddenTurns and ShownTurns are the turns it took out of and put
	// back into the active conversation.
	HiddenTurns []int `json:"hidden_turns" jsonschema:"turns it took out of the active conversation"`
	ShownTurns  []int `json:"shown_turns" jsonschema:"turns it put back into the active conversation"`
	// InEffect: its change is current (it is done and not undone).
	InEffect bool `json:"in_effect" jsonschema:"its change is current"`
	// CanUndo and CanRedo say whether undo or redo with this op's id
	// would act on it.
	CanUndo bool `json:"can_undo" jsonschema:"undo with this id would reverse it"`
	CanRedo bool `json:"can_redo" jsonschema:"redo with this id would re-apply it"`
	// NextUndo and NextRedo mark the op a plain undo or redo acts on.
	NextUndo bool `json:"next_undo" jsonschema:"a plain undo reverses this op"`
	NextRedo bool `json:"next_redo" jsonschema:"a plain redo re-applies this op"`
	// PathBytes maps each path above that is not UTF-8 (as its JSON
	// string) to its exact bytes.
	PathBytes map[string][]byte `json:"path_bytes,omitempty" jsonschema:"each path above that is not UTF-8, mapped to its exact bytes (base64)"`
}

// Op words what the op did, for people: "rewind both to turn 2", "undo
// of 3 (turn 2, both)", "revert turn 4", "summarize at turn 5".
func (e HistoryEntry) Op() string {
	target := controller.Target{Turn: e.Turn, Step: e.Step}
	switch e.Kind {
	case "undo", "redo":
		return fmt.Sprintf("%s of %d (turn %s, %s)", e.Kind, e.Undoes, target, e.Scope)
	case "summarize":
		return fmt.Sprintf("summarize at turn %d", e.Turn)
	case "revert":
		return fmt.Sprintf("revert turn %d", e.Turn)
	}
	return fmt.Sprintf("rewind %s to turn %s", e.Scope, target)
}

// Status words where the op stands, for people: "in effect", "undone by
// 7", "redone" (undone, and that undo undone), or "unfinished".
func (e HistoryEntry) Status() string {
	switch {
	case e.State == "planned":
		return "unfinished"
	case e.InEffect && e.UndoneBy != 0:
		return "redone"
	case e.InEffect:
		return "in effect"
	}
	return fmt.Sprintf("undone by %d", e.UndoneBy)
}

// HistoryFile is a file an op rewrote, with its state before and after.
type HistoryFile struct {
	Path   string    `json:"path" jsonschema:"workspace-relative, slash-separated"`
	Before FileState `json:"before" jsonschema:"the file just before the op"`
	After  FileState `json:"after" jsonschema:"the file just after the op"`
}

// FileState is a file's recorded state.
type FileState struct {
	// Exists is false for an absent file (the other fields are then
	// empty).
	Exists bool `json:"exists" jsonschema:"the file existed"`
	// Blob is the content's full blob id.
	Blob string `json:"blob" jsonschema:"the content's blob id"`
	// Mode is the permission bits in octal.
	Mode string `json:"mode" jsonschema:"the permission bits in octal"`
	Size int64  `json:"size" jsonschema:"the size in bytes"`
	// Lost: the store no longer holds the content.
	Lost bool `json:"lost" jsonschema:"the store no longer holds the content"`
}

// newFileState is a recorded state (a controller.HistoryEntry's file's
// Before or After, given field by field): blob, when it exists, is its
// content's id.
func newFileState(exists bool, blob fmt.Stringer, mode fs.FileMode, size int64, lost bool) FileState {
	if !exists {
		return FileState{Lost: lost}
	}
	return FileState{Exists: true, Blob: blob.String(), Mode: fmt.Sprintf("%04o", mode.Perm()), Size: size, Lost: lost}
}

// NewHistory is the journal h, in its order; never nil.
func NewHistory(h []controller.HistoryEntry) []HistoryEntry {
	out := make([]HistoryEntry, len(h))
	for i, e := range h {
		out[i] = HistoryEntry{ID: e.ID, Time: e.Time.UTC(), Kind: e.Kind, Scope: string(e.Scope), Turn: e.Turn, Step: e.Step,
			Undoes: e.Undoes, State: e.State, UndoneBy: e.UndoneBy, Paths: nonNil(e.Paths), Files: make([]HistoryFile, len(e.Files)),
			HiddenTurns: nonNil(e.HiddenTurns), ShownTurns: nonNil(e.ShownTurns), InEffect: e.InEffect,
			CanUndo: e.CanUndo, CanRedo: e.CanRedo, NextUndo: e.NextUndo, NextRedo: e.NextRedo}
		files := make([]string, len(e.Files))
		for j, f := range e.Files {
			b, a := f.Before, f.After
			out[i].Files[j] = HistoryFile{Path: f.Path, Before: newFileState(b.Exists(), b.Content, b.Mode, b.Size, b.Lost),
				After: newFileState(a.Exists(), a.Content, a.Mode, a.Size, a.Lost)}
			files[j] = f.Path
		}
		out[i].PathBytes = pathBytesMap(e.Paths, files)
	}
	return out
}

// Change is one difference between the open turn's start and now:
// `ckpt status --json`'s elements and the MCP tool status's changes.
type Change struct {
	Path string `json:"path" jsonschema:"workspace-relative, slash-separated"`
	// PathBytes is Path's exact bytes when they are not UTF-8.
	PathBytes []byte `json:"path_bytes,omitempty" jsonschema:"the path's exact bytes (base64) when it is not UTF-8"`
	// Kind is "added", "modified", "deleted" or "type_changed" (the path
	// is no longer a file or absent; Now says what it is).
	Kind string `json:"kind" jsonschema:"added, modified, deleted or type_changed"`
	// Now, for a type change only: "directory", "symlink" or "special
	// file".
	Now string `json:"now,omitempty" jsonschema:"for a type change: directory, symlink or special file"`
}

// NewChanges is changes; never nil.
func NewChanges(changes []controller.Change) []Change {
	out := make([]Change, len(changes))
	for i, c := range changes {
		out[i] = Change{Path: c.Path, PathBytes: PathBytes(c.Path), Kind: c.Kind, Now: c.Now}
	}
	return out
}

// Session is one session of a store: `ckpt sessions --json` and GET
// /api/sessions.
type Session struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	// Turns counts the turns in the active history.
	Turns int `json:"turns"`
	// Bytes is what the blobs only this session references take: what
	// removing it would free.
	Bytes int64 `json:"bytes"`
	// SharedBytes is what the blobs it shares with other sessions take.
	SharedBytes int64 `json:"shared_bytes"`
	// LastUse is when the session was last changed.
	LastUse time.Time `json:"last_use"`
	// Parent is where it was forked from; null for a session that is not
	// a fork. The parent may have been removed since.
	Parent *Parent `json:"parent"`
	// Error says why the session's index could not be read (the other
	// fields but ID are then zero); omitted when it was read.
	Error string `json:"error,omitempty"`
}

// Parent is the session a fork was made from and the turn it was forked
// before.
type Parent struct {
	Session string `json:"session"`
	Turn    int    `json:"turn"`
}

// NewSession is the session i.
func NewSession(i controller.SessionInfo) Session {
	out := Session{ID: i.ID, Workspace: i.Workspace, Turns: i.Turns, Bytes: i.Bytes, SharedBytes: i.SharedBytes, LastUse: i.LastUse, Error: i.Error}
	if i.Parent != "" {
		out.Parent = &Parent{Session: i.Parent, Turn: i.ParentTurn}
	}
	return out
}

// NewSessions is infos, in their order; never nil.
func NewSessions(infos []controller.SessionInfo) []Session {
	out := make([]Session, len(infos))
	for i, info := range infos {
		out[i] = NewSession(info)
	}
	return out
}

// SessionNode is one session of the session tree (`ckpt sessions --tree
// --json`), with the sessions forked from it.
type SessionNode struct {
	Session
	Children []*SessionNode `json:"children"`
}

// NewSessionTree arranges sessions by origin: a fork goes under its parent
// when the parent is among infos; a session that is not a fork, or whose
// parent is gone, is a root. Roots are sorted by id, children keep the
// order of infos. A cycle (possible only when a removed session's id was
// reused) is broken by making its first member a root. Never nil.
func NewSessionTree(infos []controller.SessionInfo) []*SessionNode {
	nodes := map[string]*SessionNode{}
	for _, i := range infos {
		nodes[i.ID] = &SessionNode{Session: NewSession(i), Children: []*SessionNode{}}
	}
	forks := map[string][]*SessionNode{} // by parent, in id order
	for _, i := range infos {
		if i.Parent != "" {
			forks[i.Parent] = append(forks[i.Parent], nodes[i.ID])
		}
	}
	roots := []*SessionNode{}
	placed := map[string]bool{}
	var place func(n *SessionNode)
	place = func(n *SessionNode) {
		placed[n.ID] = true
		for _, c := range forks[n.ID] {
			if !placed[c.ID] {
				n.Children = append(n.Children, c)
				place(c)
			}
		}
	}
	for _, i := range infos {
		if n := nodes[i.ID]; n.Parent == nil || nodes[n.Parent.Session] == nil {
			roots = append(roots, n)
			place(n)
		}
	}
	for _, i := range infos { // cycles
		if n := nodes[i.ID]; !placed[n.ID] {
			roots = append(roots, n)
			place(n)
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].ID < roots[j].ID })
	return roots
}

// EachLine calls f for every session of the tree under roots, depth
// first, with its name as a text tree draws it: the branches above it
// ("├─ ", "└─ ", "│  "), its id, and the turn a fork was made before —
// "(turn 3)", or for a root whose parent is gone "(from ID turn 3,
// gone)".
func EachLine(roots []*SessionNode, f func(name string, s Session)) {
	var walk func(n *SessionNode, prefix, branch string)
	walk = func(n *SessionNode, prefix, branch string) {
		name := prefix + branch + n.ID
		switch {
		case n.Parent != nil && branch == "":
			name += fmt.Sprintf(" (from %s turn %d, gone)", n.Parent.Session, n.Parent.Turn)
		case n.Parent != nil:
			name += fmt.Sprintf(" (turn %d)", n.Parent.Turn)
		}
		f(name, n.Session)
		switch branch {
		case "├─ ":
			prefix += "│  "
		case "└─ ":
			prefix += "   "
		}
		for k, c := range n.Children {
			b := "├─ "
			if k == len(n.Children)-1 {
				b = "└─ "
			}
			walk(c, prefix, b)
		}
	}
	for _, r := range roots {
		walk(r, "", "")
	}
}

// Event says the session changed: GET /api/events' data lines.
type Event struct {
	// Kind is what happened ("turn_opened", "captured", "rewound", ...;
	// see controller.Event).
	Kind    string `json:"kind"`
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	// Path is the file captured.
	Path string `json:"path,omitempty"`
	// Seq is the change's position in the session's change log.
	Seq int64 `json:"seq,omitempty"`
}

// NewEvent is e.
func NewEvent(e controller.Event) Event {
	return Event{Kind: e.Kind, Session: e.Session, Turn: e.Turn, Path: e.Path, Seq: e.Seq}
}
