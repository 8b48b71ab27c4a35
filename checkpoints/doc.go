// Package checkpoints is ckpt's index: the model of a session's turns, file
// snapshots, conversation and rewind journal, and its SQLite adapter.
//
// One Index lives in one directory per session (index.db there); several
// sessions may share one cas store, so the index holds only blob ids. The
// store's Catalog (catalog.db) caches a summary of each session for the
// store-wide commands, trusted only while the index files are unchanged
// (see catalog.go); a fork records its origin (RecordOrigin), which makes
// the sessions of a store a tree.
//
// The model:
//   - A turn (Checkpoint) is opened by BeginTurn and numbered from 0 in the
//     active history. The open turn is the active turn with the highest
//     number.
//   - A FileSnap is a path's state at the start of a turn, recorded at the
//     first capture of that path in the turn (later captures are no-ops).
//     Content nil means the file did not exist.
//   - Every event that changes the workspace as ckpt knows it (a first
//     capture, a path rewritten by a rewind or an undo) takes the next value
//     of one clock (seq; kept in meta under "clock", a key SetMeta and
//     InitMeta refuse). A path's state at the start of turn T is the
//     "before" state of its first event after T's seq; Earliest returns
//     exactly that, so a rewind that follows another rewind still restores
//     the right bytes.
//   - A Step is one tool call of a turn (BeginStep), numbered from 1, with
//     a clock value of its own. A capture in a step records the path's
//     first touch in it: in snaps when the turn has no snapshot of the path
//     yet (FileSnap.Step says which step), else once per later step in
//     step_snaps, which are events like any other. A path's state just
//     before step S is the before-state of its first event after the
//     step's seq, as for a turn.
//   - An Op is a rewind or an undo. PlanOp records it, with the before and
//     after state of every path it will rewrite, in state "planned" before
//     any file is touched; FinishOp marks it done and applies its
//     conversation change in the same transaction. A planned op found later
//     (a crash in between) is finished by the controller, never ignored.
//   - Conversation rewinds hide turns (hidden_by), never delete them; an
//     undo unhides them and hides the turns opened since.
//
// Invariants: turn numbers of active turns are distinct, usually 0..n-1
// (an undo of an older conversation rewind by its id can leave a gap: it
// shows again the turns it hid, not the earlier ones a newer rewind hid);
// every public method is one transaction (begin, helpers taking the tx,
// commit), so a crash leaves the index at a whole step. The DSN carries
// busy_timeout, WAL, synchronous NORMAL, foreign keys and _txlock=immediate;
// Open verifies WAL and busy_timeout took effect. Driver errors do not leak:
// a missing row is ErrNotFound. An Index is safe for concurrent use by
// goroutines, and several processes may open the same index at once.
package checkpoints
