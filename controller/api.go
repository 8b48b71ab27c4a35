package controller

import (
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/retention"
)

// The types a front-end handles, under the names it imports them by. They
// are aliases: a value of one is the value the lower package defines, so
// nothing converts between them. An embedder imports controller and
// nothing else.
type (
	// Record is a turn's checkpoint as the index holds it: number, time,
	// prompt and the files it captured (their state at the turn's start).
	// Checkpoints adds what the turn did to each file.
	Record = checkpoints.Checkpoint
	// FileSnap is a path's state at the start of a turn.
	FileSnap = checkpoints.FileSnap
	// State is one path's state: Content nil means the path did not exist.
	State = checkpoints.State
	// Message is one conversation message.
	Message = checkpoints.Message
	// Scope says what a rewind restores: ScopeCode, ScopeConversation or
	// ScopeBoth.
	Scope = checkpoints.Scope
	// BlobID names stored content: the BLAKE3-256 of its bytes.
	BlobID = cas.ID
	// CaptureResult is what Capture recorded.
	CaptureResult = capture.Result
	// ScanResult describes a workspace scan (scan mode).
	ScanResult = capture.ScanResult
	// ScanSkip is an entry a scan skipped, and why.
	ScanSkip = checkpoints.ScanSkip
	// ScanOptions tune scans (limits, budget, ignore rules); the zero
	// value takes the defaults. See Options.Scan.
	ScanOptions = capture.ScanOptions
)

// The scopes of a rewind.
const (
	ScopeCode         = checkpoints.ScopeCode
	ScopeConversation = checkpoints.ScopeConversation
	ScopeBoth         = checkpoints.ScopeBoth
)

// ParseScope accepts "code", "conversation" or "both".
func ParseScope(s string) (Scope, error) { return checkpoints.ParseScope(s) }

// ValidSession reports whether id can name a session: 1-128 letters,
// digits, '.', '_' or '-', not starting with '.'.
func ValidSession(id string) bool { return checkpoints.ValidSession(id) }

// IsConfig reports whether the canonical workspace-relative path rel is
// agent or ckpt configuration, which ckpt never records or rewinds (see
// ErrConfig).
func IsConfig(rel string) bool { return capture.IsConfig(rel) }

// Roles returns the message roles AppendMessage accepts.
func Roles() []string { return checkpoints.Roles() }

// Errors of the packages below the controller, which reach callers
// wrapped; test them with errors.Is.
var (
	// ErrNotFound: a turn, op or message the index does not have.
	ErrNotFound = checkpoints.ErrNotFound
	// ErrNoOpenTurn: Capture or AppendMessage with no open turn.
	ErrNoOpenTurn = checkpoints.ErrNoOpenTurn
	// ErrNothingToUndo: Undo with nothing left to undo.
	ErrNothingToUndo = checkpoints.ErrNothingToUndo
	// ErrBadRole: a message role not in Roles.
	ErrBadRole = checkpoints.ErrBadRole
	// ErrPruned: a code rewind or diff of a turn retention pruned.
	ErrPruned = checkpoints.ErrPruned
	// ErrBadSession: a session id ValidSession refuses.
	ErrBadSession = checkpoints.ErrBadSession

	// ErrOutsideWorkspace: a path that resolves outside the workspace.
	ErrOutsideWorkspace = capture.ErrOutsideWorkspace
	// ErrVCSDir: a path inside .git (or another version-control directory).
	ErrVCSDir = capture.ErrVCSDir
	// ErrConfig: agent or ckpt configuration (.claude/settings.json, ...),
	// protected like a VCS directory; it is ErrVCSDir as well.
	ErrConfig = capture.ErrConfig
	// ErrSymlink: a path that is a symbolic link.
	ErrSymlink = capture.ErrSymlink
	// ErrNotRegular: a path that is not a regular file.
	ErrNotRegular = capture.ErrNotRegular

	// ErrBlobNotFound: stored content the store no longer has.
	ErrBlobNotFound = cas.ErrNotFound
	// ErrCorrupt: stored content whose bytes do not match their id.
	ErrCorrupt = cas.ErrCorrupt

	// ErrPinned: removing a session with pinned turns without force.
	ErrPinned = retention.ErrPinned
	// ErrNoIndex: a session directory without a readable index (the
	// error is a *NoIndexError).
	ErrNoIndex = retention.ErrNoIndex
)

// Store-wide types (see Store).
type (
	// Policy is a retention policy.
	Policy = retention.Policy
	// PolicyConfig is a policy as config.json (or flags) spell it.
	PolicyConfig = retention.Config
	// Plan is what a policy decides for the store.
	Plan = retention.Plan
	// GCReport is what a collection did.
	GCReport = retention.GCReport
	// CollectOptions modify Store.Collect.
	CollectOptions = retention.CollectOptions
	// Removal is what Store.RemoveSession removed.
	Removal = retention.Removal
	// VerifyReport is what Store.Verify found and did.
	VerifyReport = retention.VerifyReport
	// Finding is one problem Store.Verify found with one blob.
	Finding = retention.Finding
	// NoIndexError names a session without a readable index.
	NoIndexError = retention.NoIndexError
)

// FormatBytes writes n bytes for people ("1.5 MiB").
func FormatBytes(n int64) string { return retention.FormatBytes(n) }

// ParseAge parses an age such as "30d", "12h" or "0".
func ParseAge(s string) (time.Duration, error) { return retention.ParseAge(s) }

// ParseBytes parses a size such as 2GiB or 500MB (see retention.ParseBytes).
func ParseBytes(s string) (int64, error) { return retention.ParseBytes(s) }

// Page selects part of the active turns for CheckpointsPage; PageInfo
// describes the history it was cut from.
type (
	Page     = checkpoints.Page
	PageInfo = checkpoints.PageInfo
)
