// Package capture is the pre-edit seam and the one place ckpt touches the
// workspace's files.
//
// A Workspace turns any spelling of a path (relative to the root, absolute,
// through a symlinked parent that stays inside) into one canonical
// workspace-relative, slash-separated path, and refuses the rest:
//   - a path that resolves outside the root, directly or through a
//     symlinked parent that leads out: ErrOutsideWorkspace;
//   - a path inside a .git (or other VCS) directory: ErrVCSDir — ckpt never
//     reads or writes there;
//   - a symlink at the path itself: ErrSymlink. ckpt records regular files
//     only and never follows or replaces a link; a tool that writes through
//     a link changes the link's target, so capture the target instead;
//   - a directory, device, socket or pipe at the path: ErrNotRegular.
//
// Capture records a path's state into the open turn before a tool changes
// it: the exact bytes (stored in the cas) and the permission bits, or "did
// not exist" (nil content, plus the ancestor directories that were missing
// too) for a path that is absent. The first capture of a path in a turn wins;
// later ones are no-ops. A file that cannot be read is an error and records
// nothing: unreadable never means absent.
//
// The restore side (Stage, Commit, Remove, Inspect) writes only regular
// files, atomically (a temp file created exclusively in the same directory,
// fsync, rename), never through a symlink, and re-checks every parent just
// before it writes.
//
// Scan mode: Scan walks the workspace under the ignore rules of Ignore
// (gitignore(5) semantics, checked against git: .gitignore at every level,
// .ckptignore, built-in dependency/cache/VCS directories), pruning ignored
// directories as it goes, never following a symlink, skipping files over a
// size limit and crowded directories, and reusing the blob id of files whose
// stat matches the stat cache (git's racy rule applies).
package capture
