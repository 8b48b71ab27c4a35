// Package controller is the one API every ckpt front-end drives: the CLI,
// agent hooks, a TUI or an HTTP server. No rewind logic lives anywhere else.
//
// A Store is a store directory, the root object: OpenStore it once per
// process. A Controller, opened from it (Store.Open), drives one session of
// one workspace: the session's index at STORE/sessions/ID/index.db and the
// blob store at STORE/blobs, shared by all sessions and opened once per
// Store, whatever the number of Controllers. It opens turns, captures paths
// (through package capture), appends messages, lists checkpoints, diffs,
// rewinds and undoes, and reports each change of the session, whatever
// process made it, as an Event (Watch). Open is OpenStore and Store.Open in one, for a process with one
// session (a CLI command).
//
// Embedding: package controller is all a front-end imports to drive
// sessions (package retention too, to name what the Store's retention
// methods return). Open a
// Controller with Options (workspace, and optionally session, Clock,
// Logger, Scan); BeginTurn per user prompt; Capture each path before a
// tool writes it (CaptureOptions: one path or many, into a step or not);
// AppendMessage; Checkpoints (ListOptions: all, a page, or streamed, with
// steps and line counts if asked), Turn (-1: the open one), Conversation
// and Diff to show; Rewind (to a Target: a turn, or a step of it; or, with
// RewindOptions.Revert, one turn's own changes), Undo and Redo to act;
// History for every op; Meta and SetMeta for the session's settings (scan
// mode, a front-end's own keys). The few types of the packages below that
// a front-end names (Scope, Step, ...) and the sentinel errors it tests
// are re-exported here as aliases (api.go); those it only receives (a
// Capture's results, a list's page info, a scan's skipped entries, a
// history entry's file states) are used through the values returned. To
// follow a session, Watch it from now (WatchOptions.After -1): its first
// event, a "resync", is when to read the state shown; then come every
// change by any process (agent hooks run in their own), in commit order,
// and a "resync" again when it fell so far behind that the bounded log
// lost what it missed. The Store does the work that needs no workspace:
// settling the workspace and session a front-end serves, by one rule for
// all (Resolve: the workspace enclosing a directory, as git finds its
// repository; the session named, by a unique prefix, or the workspace's
// last active), listing sessions (Sessions: the store's, or a
// workspace's), a workspace's scan-mode default (WorkspaceScan),
// retention, gc and verify (Retain, RemoveSession, Verify), and an agent's
// forked conversations (Continue, Adopt). Package controller/httpapi serves a
// Controller over HTTP with the web page.
//
// Rewind semantics (docs/design.md):
//   - code: every path with a recorded event since turn T opened (a capture
//     in any later turn, or a path a later rewind or undo rewrote) is put back
//     to its state at T's start: the before-state of its first such event.
//     Content and permission bits are written; a path whose state was "did
//     not exist" is deleted, with the directories the index proves were
//     created after it, when empty. Paths never recorded are untouched.
//   - conversation: turns T.. leave the active history (hidden, never
//     deleted), T's prompt is handed back, and the next turn opened is T.
//   - both: code then conversation as one op.
//   - a step (Rewind to Target{T, S}, "T.S"): each tool call opens a step of the open
//     turn (BeginStep) at a clock value of its own, and the first touch of
//     a path in each step is recorded. A code rewind to step S of turn T is
//     the code rule above from that clock value: every path with an event
//     since step S opened goes back to the before-state of its first such
//     event, i.e. to just before T's S-th tool call. A step rewinds code
//     only (ErrStepScope otherwise): the conversation is recorded by turns.
//     A scanned turn's manifest is an event at the turn's start, before its
//     steps, so a shell's changes inside turn T are not undone by T.S
//     (later scanned turns still bring theirs back to how T ended).
//
// Nothing is lost: before a rewind touches a file it stores the file's
// current bytes and records the whole plan (op "planned"); Undo reverses the
// last rewind not yet undone, and repeats walk further back; Redo undoes an
// undo, and History lists every op (see history.go for why every recorded
// state is reachable). Files are
// written in two phases: every new content is first staged as a temp file
// next to its target (verifying the blob's hash while writing), the temp
// files are made durable together (on Linux's local file systems, when
// little else is dirty, with one syncfs once all are written,
// capture.Barrier; else fsynced 32 at a time, so the file system commits
// many per journal transaction), and
// only when all are staged and durable are they renamed into place. A failure while staging
// changes nothing; a crash after the plan is recorded leaves an op that the
// next Open finishes (or, if a blob can no longer be read, rolls back).
//
// Scan mode: a turn opened with TurnOptions.Scan (or in a session with
// SetMeta "scan" on) records a manifest of the workspace first; a manifest entry is
// an event at the turn's start, and so is a manifest's lack of a path: a
// code rewind to T deletes a file when a scanned turn opened at or after T
// lacks it before any other event of it (not under paths that scan
// skipped, and only when the ignore files then and now agree, so "absent"
// cannot be "ignored then"). While a scanned turn is open every change is
// taken to be the agent's (its shell's): such changes are never conflicts.
// Undo refuses (ErrConflict) to overwrite work done since the rewind
// unless forced; it puts back what ckpt knew before the rewind too, so a
// hand edit it brings back is still a conflict for the next rewind.
//
// Obstacles are judged against the tree the plan leaves: deletes run
// before writes; a directory in the way of a restored file is removed once
// the plan has deleted every file in it (else the file is skipped, naming
// what is kept); a file in the way of a restored directory is deleted
// first when the plan deletes it. Just before each path is replaced or
// deleted it is looked at again: one edited since the plan is skipped and
// left as it is, not recorded in the op.
//
// Safety: paths whose parent is a symlink or not a directory, and paths
// that are now a symlink, directory or special file, are skipped and
// reported, never written or deleted through; everything else is restored.
// Nothing under .git is ever read or written. A Controller is safe for
// concurrent use; rewinds and undos of one session are serialised across
// processes by a lock file, captures from several processes may run at once.
package controller
