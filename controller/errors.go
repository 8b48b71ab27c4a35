package controller

import (
	"errors"

	"github.com/ckpt/ckpt/checkpoints"
)

// Errors returned by the controller. Callers test them with errors.Is; the
// sentinels of the packages below it pass through wrapped, and api.go
// re-exports those a front-end tests (ErrNoOpenTurn, ErrOutsideWorkspace,
// ...).
var (
	// ErrNoTurn is wrapped when a rewind or diff names a turn that is not
	// in the active history. When a conversation rewind hid it (an undo
	// of that rewind brings it back) the message says so instead: "hidden
	// by a conversation rewind".
	ErrNoTurn = errors.New("no such turn")
	// ErrWorkspaceMismatch is wrapped when a session is opened for a
	// workspace other than the one it was created for.
	ErrWorkspaceMismatch = errors.New("session belongs to another workspace")
	// ErrBusy is wrapped when another process holds the session's rewind
	// lock for longer than the wait.
	ErrBusy = errors.New("another rewind or undo of this session is running")
	// ErrNoStep is wrapped when a rewind or diff names a step its turn
	// does not have.
	ErrNoStep = checkpoints.ErrNoStep
	// ErrStepScope is wrapped when a rewind to a step asks for the
	// conversation: ckpt records the conversation by turns, so a step
	// rewind restores code only.
	ErrStepScope = errors.New("a step rewinds code only: rewind the turn for its conversation")
	// ErrConflict is wrapped when an op would overwrite work done since:
	// files a code rewind or a revert would write changed since the agent
	// left them (by a person, or another session), or, for Undo and Redo,
	// work done since the rewind or undo they reverse (a file changed
	// since, in a later turn or by hand, or turns opened since, which an
	// undo of a conversation rewind hides). The Result lists what would
	// be overwritten and the message says which it is. Nothing is changed
	// unless forced (what a forced op overwrites, Undo brings back).
	ErrConflict = errors.New("files changed since the agent left them (force to overwrite; undo brings them back)")
	// ErrNotInEffect is wrapped when Undo or Redo cannot reverse the op
	// as asked, whatever the force: RewindOptions.Op names an unfinished
	// op, or, for Redo, an op whose effect is in effect; or the op cannot
	// be reversed exactly, said as "op cannot be reversed exactly" (it
	// changed the conversation before such changes were recorded and is
	// not the newest rewind, or showing its turns again would put two
	// turns with one number in the active history).
	ErrNotInEffect = errors.New("op is not in the state that allows it")
	// ErrSessionExists is wrapped when a fork names a session that exists.
	ErrSessionExists = checkpoints.ErrExists
	// ErrScanRefused is wrapped when scan mode is asked for in a home
	// directory or a filesystem root: a manifest of either would be huge
	// and hold files that are not the project's.
	ErrScanRefused = errors.New("scan mode refused: the workspace is a home directory or a filesystem root")
)

// noSessionError is what Open told not to create a session
// (Options.NoCreate) fails with when the store has never had it: an
// ErrNotFound, said as "no such session".
type noSessionError struct{}

func (noSessionError) Error() string        { return "no such session" }
func (noSessionError) Is(target error) bool { return target == ErrNotFound }

// variant is an error in words of its own that is one of the exported
// sentinels for errors.Is: callers that act on the sentinel need not
// tell its variants apart, and people read which it is.
type variant struct {
	msg string
	of  error
}

func (v *variant) Error() string        { return v.msg }
func (v *variant) Is(target error) bool { return target == v.of }

// The variants of ErrNoTurn, ErrConflict, ErrNothingToUndo and
// ErrNotInEffect.
var (
	// errNotReversible: the op cannot be reversed exactly.
	errNotReversible = &variant{"op cannot be reversed exactly", ErrNotInEffect}
	// errTurnHidden: the turn named is hidden by a conversation rewind.
	errTurnHidden = &variant{"hidden by a conversation rewind", ErrNoTurn}
	// errUndoConflict: Undo would overwrite work done since the rewind it
	// reverses.
	errUndoConflict = &variant{"work was done since that rewind; undo would overwrite it (force to undo anyway)", ErrConflict}
	// errRedoConflict: Redo (or Undo of an undo) would overwrite work
	// done since the undo it reverses.
	errRedoConflict = &variant{"work was done since that undo; redo would overwrite it (force to redo anyway)", ErrConflict}
	// errNothingToRedo: Redo finds no undone op it can re-apply.
	errNothingToRedo = &variant{"nothing to redo", ErrNothingToUndo}
)

// errLaterChanges is wrapped by Revert when a later turn changed a file
// the reverted turn changed too: reverting would lose that later change,
// and force does not override it. Callers need not tell it from other
// failures: the message names the files.
var errLaterChanges = errors.New("a later turn changed these files too")

// errEmptySummary is what Summarize fails with when its text is empty (or
// only spaces): a precondition its caller checks as easily.
var errEmptySummary = errors.New("summary text is empty")
