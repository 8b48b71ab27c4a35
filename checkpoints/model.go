package checkpoints

import (
	"errors"
	"io/fs"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// Errors returned by the index. Callers test them with errors.Is.
var (
	// ErrNotFound is wrapped when a turn, op or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoOpenTurn is wrapped when an operation needs an open turn and the
	// session has none (no turn was ever opened, or all were rewound).
	ErrNoOpenTurn = errors.New("no open turn")
	// ErrNothingToUndo is wrapped by LastRewind when no rewind is left to undo.
	ErrNothingToUndo = errors.New("nothing to undo")
	// ErrBadRole is wrapped when a message role is not one of Roles.
	ErrBadRole = errors.New("role must be user, assistant, tool or system")
	// ErrPruned is wrapped when a code rewind targets a turn whose file
	// snapshots retention has pruned.
	ErrPruned = errors.New("turn was pruned by retention: its files can no longer be restored")
)

// roles are the message roles the conversation accepts.
var roles = []string{"user", "assistant", "tool", "system"}

// Roles returns the message roles the conversation accepts.
func Roles() []string { return append([]string(nil), roles...) }

// State is one path's state: Content nil means the path did not exist.
type State struct {
	Content *cas.ID
	Mode    fs.FileMode
	Size    int64
	// Dirs, for an absent path only, lists the ancestor directories
	// (workspace-relative, deepest first) that were absent too. Restoring
	// the absent state removes them again when they are empty: the index
	// proves they were created later.
	Dirs []string
	// Lost is set when verify --repair found this state's blob missing or
	// corrupt: nothing can restore it, and a rewind skips the path.
	Lost bool
}

// Exists reports whether the state is a file rather than absence.
func (s State) Exists() bool { return s.Content != nil }

// Equal reports whether two states hold the same bytes and mode (absence
// equals absence).
func (s State) Equal(o State) bool {
	if s.Content == nil || o.Content == nil {
		return s.Content == nil && o.Content == nil
	}
	return *s.Content == *o.Content && s.Mode.Perm() == o.Mode.Perm()
}

// FileSnap is a path's state at the start of a turn.
type FileSnap struct {
	Path    string      // workspace-relative, slash-separated, cleaned
	Content *cas.ID     // nil: the file did not exist (a rewind deletes it)
	Mode    fs.FileMode // permission bits, executable bit included
	Size    int64
	Dirs    []string // for Content nil: ancestors that were absent too (see State)
	// End is the state found when the next turn opened; nil while the turn
	// is open or when it was not recorded.
	End *State
	// Step is the step of the turn (its tool call, from 1) that made this
	// capture; 0 before the turn's first step.
	Step int
}

// State returns the snapshot as a State.
func (f FileSnap) State() State {
	return State{Content: f.Content, Mode: f.Mode, Size: f.Size, Dirs: f.Dirs}
}

// Checkpoint is the record of one turn.
type Checkpoint struct {
	Turn   int
	Time   time.Time
	Prompt string
	Files  []FileSnap // sorted by path

	ID  int64 // stable internal id; turn numbers are reused after a rewind
	Seq int64 // clock value when the turn opened

	Pinned  bool   // exempt from retention
	Label   string // a name given when pinning
	Pruned  bool   // retention dropped its file snapshots
	Scanned bool   // a manifest of the whole workspace was taken when it opened
}

// Message is one conversation message.
type Message struct {
	ID   int64
	Turn int
	Role string
	Text string
	Time time.Time
}

// Scope says what a rewind restores.
type Scope string

// The scopes.
const (
	ScopeCode         Scope = "code"
	ScopeConversation Scope = "conversation"
	ScopeBoth         Scope = "both"
)

// ParseScope accepts "code", "conversation" or "both".
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeCode, ScopeConversation, ScopeBoth:
		return Scope(s), nil
	}
	return "", errors.New(`scope must be "code", "conversation" or "both"`)
}

// UnmarshalText sets s from "code", "conversation" or "both" (as
// ParseScope), so a Scope decodes from JSON and flags.
func (s *Scope) UnmarshalText(b []byte) error {
	sc, err := ParseScope(string(b))
	if err != nil {
		return err
	}
	*s = sc
	return nil
}

// Code reports whether the scope restores files.
func (s Scope) Code() bool { return s == ScopeCode || s == ScopeBoth }

// Conversation reports whether the scope cuts the conversation.
func (s Scope) Conversation() bool { return s == ScopeConversation || s == ScopeBoth }

// OpKind is "rewind" or "undo".
type OpKind string

// The op kinds.
const (
	OpRewind OpKind = "rewind"
	OpUndo   OpKind = "undo"
)

// OpFile is one path an op rewrites.
type OpFile struct {
	Path   string
	Before State // what was there before the op (restored by undo)
	After  State // what the op puts there
	// Seen, in memory only (never recorded), is the stat of the read
	// that found Before, when the plan read a file: applying the op in
	// the same process takes the path as still Before while its stat
	// matches (see StatEntry), instead of reading it again. Nil (an op
	// read back from the index, as recovery does): read it.
	Seen *StatEntry
}

// Op is a rewind or an undo.
type Op struct {
	ID     int64
	Seq    int64
	Kind   OpKind
	Turn   int // the target turn number (for an undo, the rewind's)
	Scope  Scope
	State  string // "planned", "done" or "undone"
	Undoes int64  // for an undo: the rewind's id
	Prompt string // prompt handed back by a conversation rewind
	Time   time.Time
	Files  []OpFile
	// Action is ActionRewind for rewinds and undos, or one of the
	// summarize actions: a conversation op that hides messages and adds
	// Prompt as one summary message instead of hiding turns.
	Action Action
	// Revert marks a rewind that reverts one turn's files (Journal reads
	// it back; it changes nothing in how the op is applied).
	Revert bool
	// Step is the step of Turn a code rewind went back to (0: the turn's
	// start).
	Step int
}

// Action says what a conversation op does; see Op.Action.
type Action string

// The actions. The empty Action means ActionRewind.
const (
	ActionRewind        Action = "rewind"
	ActionSummarizeFrom Action = "summarize_from"  // messages of turns Turn.. replaced
	ActionSummarizeUpTo Action = "summarize_up_to" // messages of turns before Turn replaced
)

// Summarizes reports whether the op is a summarize.
func (o Op) Summarizes() bool {
	return o.Action == ActionSummarizeFrom || o.Action == ActionSummarizeUpTo
}
