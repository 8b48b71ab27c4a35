package controller

import (
	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// The types of the packages below that a front-end names, under the names
// it imports them by. They are aliases: a value of one is the value the
// lower package defines, so nothing converts between them. An embedder
// imports controller and nothing else.
type (
	// Scope says what a rewind restores: ScopeCode, ScopeConversation or
	// ScopeBoth.
	Scope = checkpoints.Scope
)

// The scopes of a rewind.
const (
	ScopeCode         = checkpoints.ScopeCode
	ScopeConversation = checkpoints.ScopeConversation
	ScopeBoth         = checkpoints.ScopeBoth
)

// ValidSession reports whether id can name a session: 1-128 letters,
// digits, '.', '_' or '-', not starting with '.'.
func ValidSession(id string) bool { return checkpoints.ValidSession(id) }

// Errors of the packages below the controller, which reach callers
// wrapped; test them with errors.Is. Rarer ones (a symlink, a corrupt
// blob, ...) are those packages' own: capture.ErrSymlink, cas.ErrCorrupt.
var (
	// ErrNotFound: a turn, op, message or session the index (or the
	// store) does not have.
	ErrNotFound = checkpoints.ErrNotFound
	// ErrNoOpenTurn: Capture or AppendMessage with no open turn.
	ErrNoOpenTurn = checkpoints.ErrNoOpenTurn
	// ErrNothingToUndo: Undo with nothing left to undo, or Redo with
	// nothing to redo (nothing was undone, or a newer rewind ended the
	// chain: Redo with RewindOptions.Op still reaches it); the message says
	// which.
	ErrNothingToUndo = checkpoints.ErrNothingToUndo
	// ErrPruned: a code rewind or diff of a turn retention pruned.
	ErrPruned = checkpoints.ErrPruned
	// ErrBadSession: a session id ValidSession refuses.
	ErrBadSession = checkpoints.ErrBadSession
	// ErrOutsideWorkspace: a path that resolves outside the workspace.
	ErrOutsideWorkspace = capture.ErrOutsideWorkspace
	// ErrVCSDir: a path inside .git (or another version-control
	// directory), or agent or ckpt configuration (.claude/settings.json,
	// ...), which ckpt never records or rewinds.
	ErrVCSDir = capture.ErrVCSDir
	// ErrBlobNotFound: stored content the store no longer has.
	ErrBlobNotFound = cas.ErrNotFound
)
