// Package capture is the pre-edit seam and the one place ckpt touches the
// workspace's files.
//
// A Workspace turns any spelling of a path (relative to the root, absolute,
// through a symlinked parent that stays inside) into one canonical
// workspace-relative, slash-separated path, and refuses the rest:
//   - a path that resolves outside the root, directly or through a
//     symlinked parent that leads out: ErrOutsideWorkspace;
//   - a path with an element naming a VCS directory (.git .hg .svn .jj
//     .bzr) in any case — .GIT is .git on a case-insensitive file system —
//     and on Windows also its 8.3 short name (GIT~1), with trailing dots or
//     spaces, or with a stream suffix: ErrVCSDir — ckpt never reads or
//     writes there;
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
// fsync, rename; StageUnsynced and SyncStaged split the write from the
// fsync so an operation can sync many files at once, and StageFor with a
// Barrier makes them all durable with one syncfs; SyncDirs then fsyncs
// each directory touched, once), never
// through a symlink, and re-checks every parent just before it writes.
//
// # One handle, no escape
//
// A Workspace holds one os.Root opened on the workspace root, and every
// access to the workspace's files goes through it: capture reads, scan
// walks, Rel's resolution of symlinked parents (Lstat and Readlink only),
// restore staging, rename, remove, mkdir and chmod (on the open temp
// file). os.Root resolves names with openat-style calls relative to the
// open directory (on Windows, its own handle-relative implementation), so
// no name, "..", or symlink — whatever races ckpt — can reach outside the
// root. On top of that ckpt follows no symlink at all, even one inside:
// a path is walked one element at a time, each directory Lstat'ed in its
// parent's handle and opened as a root of its own whose identity must
// match what Lstat saw; the last element is Lstat'ed, then acted on inside
// the open parent (a rename or unlink replaces or removes the entry, never
// its target; a read checks that the open descriptor is the file Lstat saw).
// A directory that changes between the check and the open is skipped as a
// symlink would be (ErrSymlink). The only calls by full path are the ones
// that open the root itself (NewWorkspace) and, until they move behind the
// handle, the ignore rules' reads of .gitignore/.ckptignore files.
// TestNoWorkspaceAccessByPath keeps it that way: it parses this package
// and controller/ and fails on any file-system call by path outside a
// short allow-list of store paths.
//
// What the handle does not cover: a directory moved (not symlinked) out of
// the workspace while ckpt has it open is still written through its open
// handle (os.Root tracks a directory across renames, as a descriptor
// does), and the workspace root itself is trusted to be the directory
// NewWorkspace opened.
//
// Scan mode: Scan walks the workspace under the ignore rules of Ignore
// (gitignore(5) semantics, checked against git: .gitignore at every level,
// .ckptignore, built-in dependency/cache/VCS directories), pruning ignored
// directories as it goes, never following a symlink, skipping files over a
// size limit and crowded directories, and reusing the blob id of files whose
// stat matches the stat cache (git's racy rule applies). Directories are
// walked in parallel (a bounded number at a time), each through its own
// handle; a directory's .gitignore is read through that handle and matched
// with the rules of its ancestors, the way Ignore.Match would find them.
// Each listing is every name of the directory, sorted: a subdirectory
// known by its getdents type (then opened with O_NOFOLLOW|O_DIRECTORY),
// every other entry lstat'ed from the directory's descriptor (nothing
// followed); it is merged with the cache's entries of that directory, so a
// re-scan allocates nothing per unchanged file. A re-scan
// reports how its files differ from the stat cache (Manifest.Since,
// ScanResult.Dirs) and returns stat entries only for the directories that
// changed, so the index stores the new manifest as a delta and rewrites
// only those directories' cache rows; an unchanged re-scan writes no cache
// row and its turn refers to the manifest already stored.
package capture
