package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/checkpoints"
)

// tempPrefix starts the name of every file a rewind stages; tag names the
// operation, so a crashed operation's leftovers can be found (CleanStaged).
func tempPrefix(tag string) string { return ".ckpt-" + tag + "-" }

// isStagingName reports whether a file name is one Stage makes.
func isStagingName(name string) bool {
	return strings.HasPrefix(name, ".ckpt-") && strings.HasSuffix(name, ".tmp")
}

// Staged is a temp file Stage wrote: rel's new content, not yet in place.
type Staged struct {
	Rel  string
	name string      // the temp file's name, in rel's directory
	dir  fs.FileInfo // that directory, as Stage found it
	f    *os.File    // open until synced: StageUnsynced's file before SyncStaged
	b    *Barrier    // StageFor's barrier: durable once it has synced
}

// Stage writes r to a new temp file next to rel (a name no one can
// predict, created exclusively, so nothing planted there is followed or
// truncated) with the given permission bits, and fsyncs it. It creates
// rel's missing parent directories, refusing (ErrSymlink, ErrNotRegular,
// ErrVCSDir) to pass through a symlink, a non-directory or a VCS directory.
func (w *Workspace) Stage(rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	s, err := w.StageUnsynced(rel, tag, r, mode)
	if err == nil {
		err = w.SyncStaged(&s)
	}
	return s, err
}

// StageUnsynced is Stage without the fsync: the temp file is written and
// left open, and SyncStaged must make it durable (and close it) before it
// is committed. An operation staging many files writes them all first and
// then syncs them concurrently, so the file system commits many of them
// in each journal transaction instead of one per file.
func (w *Workspace) StageUnsynced(rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	return w.stage(rel, tag, r, mode, nil)
}

// StageFor is StageUnsynced for an operation that makes its files durable
// with one Barrier: the temp file is written and closed, and Commit takes
// it only once b.Sync has returned nil.
func (w *Workspace) StageFor(b *Barrier, rel, tag string, r io.Reader, mode fs.FileMode) (Staged, error) {
	return w.stage(rel, tag, r, mode, b)
}

// stage writes the temp file: left open for SyncStaged when b is nil,
// closed and left to b otherwise.
func (w *Workspace) stage(rel, tag string, r io.Reader, mode fs.FileMode, b *Barrier) (Staged, error) {
	if err := protect(rel); err != nil {
		return Staged{}, fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, _, e, err := w.parent(rel, true)
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	if e != nil {
		return Staged{}, unsafeErr(rel, *e)
	}
	defer d.close()
	dirInfo, err := d.info()
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	var f *os.File
	var name string
	for try := 0; ; try++ {
		name = tempPrefix(tag) + strconv.FormatUint(uint64(rand.Uint32()), 10) + ".tmp"
		f, err = d.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		break
	}
	if err != nil {
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	_, err = copySparse(f, r)
	if err == nil {
		err = f.Chmod(mode.Perm())
	}
	if err != nil {
		f.Close()
		d.r.Remove(name)
		return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
	}
	if b != nil {
		if !b.covers(dirInfo) {
			err = f.Sync() // another file system, mounted below the root: syncfs of the root's misses it
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			d.r.Remove(name)
			return Staged{}, fmt.Errorf("capture: stage %s: %w", rel, err)
		}
		return Staged{Rel: rel, name: name, dir: dirInfo, b: b}, nil
	}
	return Staged{Rel: rel, name: name, dir: dirInfo, f: f}, nil
}

// SyncStaged makes a file StageUnsynced wrote durable and closes it; for
// a file Stage wrote it does nothing. When it fails the temp file is
// removed, and s can only be discarded.
func (w *Workspace) SyncStaged(s *Staged) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	if err != nil {
		w.Discard(*s)
		s.name = ""
		return fmt.Errorf("capture: stage %s: %w", s.Rel, err)
	}
	return nil
}

// stagedDir opens the directory s was staged in, if it is still where
// Stage found it (the same directory, reached without a link).
func (w *Workspace) stagedDir(s Staged) (dir, error) {
	d, _, e, err := w.parent(s.Rel, false)
	if err != nil {
		return dir{}, fmt.Errorf("capture: %s: %w", s.Rel, err)
	}
	if e != nil {
		return dir{}, unsafeErr(s.Rel, *e)
	}
	fi, err := d.info()
	if err == nil && !os.SameFile(fi, s.dir) {
		err = errSwapped
	}
	if err != nil {
		d.close()
		return dir{}, fmt.Errorf("capture: %s: parent: %w", s.Rel, err)
	}
	return d, nil
}

// Commit renames the staged file into place, after checking once more that
// the parents are real directories, the same ones Stage wrote in, and that
// rel is not a symlink or directory. The rename happens inside the open
// parent directory: it replaces rel's entry and follows nothing. Syncing
// the directory is left to SyncDirs, once for all the files of an
// operation. A file StageUnsynced wrote must be synced first (SyncStaged),
// and one StageFor wrote its barrier's Sync must have succeeded: otherwise
// Commit discards it and fails.
func (w *Workspace) Commit(s Staged) error { return w.CommitIf(s, nil, nil) }

// CommitIf is Commit that first looks at what rel holds now, through the
// directory handle the rename goes through, and renames only when check
// (unless nil) accepts it: cur is absent (nil Content) or the regular
// file's hash, permission bits and size. When check or the read fails,
// the temp file is removed and the error returned. A caller that must not
// overwrite a change made since it planned saves a second walk to the
// file this way. seen (may be nil) is the stat entry of the caller's own
// read of rel (Capturer.StateSeen): when the file's stat still matches it
// and it is not racy, cur is taken from it and the file is not read again,
// as a re-scan trusts its stat cache. Only where the stat includes ctime
// and inode (Linux): elsewhere a rewrite that keeps the size and puts the
// mtime back would pass, so the file is always read.
func (w *Workspace) CommitIf(s Staged, seen *checkpoints.StatEntry, check func(cur checkpoints.State) error) error {
	if s.f != nil || s.b != nil && !s.b.durable() {
		w.Discard(s)
		return fmt.Errorf("capture: commit %s: staged file not synced", s.Rel)
	}
	d, err := w.stagedDir(s)
	if err != nil {
		return err // the temp file, if any, is out of reach: CleanStaged finds it
	}
	defer d.close()
	_, base := splitRel(s.Rel)
	fi, err := d.r.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		d.r.Remove(s.name)
		return fmt.Errorf("capture: commit %s: %w", s.Rel, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		d.r.Remove(s.name)
		return fmt.Errorf("capture: %s: %w", s.Rel, ErrSymlink)
	case !fi.Mode().IsRegular():
		d.r.Remove(s.name)
		return fmt.Errorf("capture: %s: %w", s.Rel, ErrNotRegular)
	}
	if check != nil {
		var cur checkpoints.State
		switch {
		case err == nil && statSeesCTime && seen != nil && keyOf(fi).vouches(seen):
			cur = checkpoints.State{Content: &seen.Blob, Mode: seen.Mode, Size: seen.Size}
		case err == nil:
			if cur, err = hashIn(d, base, fi); err != nil {
				d.r.Remove(s.name)
				return fmt.Errorf("capture: %s: %w", s.Rel, err)
			}
		}
		if err := check(cur); err != nil {
			d.r.Remove(s.name)
			return err
		}
	}
	if err := d.r.Rename(s.name, base); err != nil {
		d.r.Remove(s.name)
		return fmt.Errorf("capture: commit %s: %w", s.Rel, err)
	}
	return nil
}

// Discard removes a staged file that will not be committed.
func (w *Workspace) Discard(s Staged) {
	if s.f != nil {
		s.f.Close()
	}
	if s.name == "" {
		return
	}
	if d, err := w.stagedDir(s); err == nil {
		if fi, err := d.r.Lstat(s.name); err == nil && fi.Mode().IsRegular() {
			d.r.Remove(s.name)
		}
		d.close()
	}
}

// CleanStaged removes the temp files an operation tagged tag staged and
// never committed (it crashed), in every directory on the way to the
// paths rels, the root included: regular files whose name only Stage
// makes. Each directory is listed once, however many paths go through it
// (see walkDirs), and one reached through a symlink is never looked in. A
// hard link there only loses that name.
func (w *Workspace) CleanStaged(rels []string, tag string) {
	w.walkDirs(rels, func(_ string, r *os.Root) error {
		ents, err := readDir(r)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			n := e.Name()
			if e.Type().IsRegular() && strings.HasPrefix(n, tempPrefix(tag)) && strings.HasSuffix(n, ".tmp") {
				r.Remove(n)
			}
		}
		return nil
	})
}

// Remove deletes the regular file at rel (absent is fine) and then each of
// dirs (relative, deepest first) that is an empty real directory. Each
// removal happens inside its open parent directory and removes the entry
// itself: a symlink swapped in is unlinked, never followed.
func (w *Workspace) Remove(rel string, dirs []string) error {
	if err := protect(rel); err != nil {
		return fmt.Errorf("capture: %s: %w", rel, err)
	}
	d, base, e, err := w.parent(rel, false)
	if err != nil {
		return fmt.Errorf("capture: %s: %w", rel, err)
	}
	if e != nil && e.Kind == Unsafe {
		return fmt.Errorf("capture: %s: %w", rel, e.Reason)
	}
	if e == nil {
		fi, err := d.r.Lstat(base)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			d.close()
			return fmt.Errorf("capture: %s: %w", rel, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			d.close()
			return fmt.Errorf("capture: %s: %w", rel, ErrSymlink)
		case !fi.Mode().IsRegular():
			d.close()
			return fmt.Errorf("capture: %s: %w", rel, ErrNotRegular)
		default:
			if err := d.r.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.close()
				return fmt.Errorf("capture: remove %s: %w", rel, err)
			}
		}
		d.close()
	}
	// A directory that is (or is inside) agent or ckpt configuration, or
	// a VCS directory, is left with every directory above it.
	for i, dr := range dirs {
		if protect(dr) != nil {
			dirs = dirs[:i]
			break
		}
	}
	w.removeDirs(dirs)
	return nil
}

// removeDirs removes each of dirs (relative, deepest first, each the
// parent of the one before) that is an empty real directory, from inside
// its parent's handle, and stops at the first that is not empty. It walks
// the chain down once, keeping a handle every maxHeld levels, and walks
// each stretch between two kept handles once more on the way up: linear in
// the depth, with about depth/maxHeld + maxHeld handles open.
func (w *Workspace) removeDirs(dirs []string) {
	if len(dirs) == 0 {
		return
	}
	names, ok := chainNames(dirs)
	if !ok {
		// Not a chain: remove one at a time.
		for _, dr := range dirs {
			if !w.removeDirs1(dr) {
				return
			}
		}
		return
	}
	if _, ok := vcsElem(dirs[0]); ok {
		return // dirs[0] holds every element of the chain
	}
	m := len(dirs)
	parts, _ := splitRel(dirs[m-1])
	top, e, err := w.openDir(parts, false)
	if err != nil || e != nil {
		return
	}
	c := &dirChain{names: names, held: make([]*os.Root, m+1)}
	c.held[m] = top.r
	defer c.close(top.own)
	c.descend()
	c.removeUp()
}

// chainNames returns the last element of each of dirs, and whether each
// of dirs is the parent of the one before.
func chainNames(dirs []string) ([]string, bool) {
	names := make([]string, len(dirs))
	for i, dr := range dirs {
		_, names[i] = splitRel(dr)
		if i > 0 && path.Dir(dirs[i-1]) != dr {
			return nil, false
		}
	}
	return names, true
}

// dirChain is removeDirs' walk of a chain of directories: names[i] is the
// last element of dirs[i], and held[i] a handle on dirs[i] (held[m]: on
// the parent of dirs[m-1], the top), or nil.
type dirChain struct {
	names []string
	held  []*os.Root
}

// close closes the handles still held, the top's only when it is the
// chain's own.
func (c *dirChain) close(ownTop bool) {
	m := len(c.names)
	for i, r := range c.held {
		if r != nil && (i < m || ownTop) {
			r.Close()
		}
	}
}

// open fills held[i..j) from held[j], as far as the directories are
// there.
func (c *dirChain) open(i, j int) {
	for k := j - 1; k >= i; k-- {
		sub, err := openChild(c.held[k+1], c.names[k])
		if err != nil {
			return
		}
		c.held[k] = sub
	}
}

// descend walks the chain down from the top as far as it goes, keeping
// every maxHeld-th handle and the deepest.
func (c *dirChain) descend() {
	m := len(c.names)
	cur, at := c.held[m], m
	for k := m - 1; k >= 1; k-- {
		sub, err := openChild(cur, c.names[k])
		if err != nil {
			break
		}
		if at != m && c.held[at] == nil {
			cur.Close()
		}
		cur, at = sub, k
		if k%maxHeld == 0 {
			c.held[k] = sub
		}
	}
	if at != m && c.held[at] == nil {
		c.held[at] = cur // the deepest reached
	}
}

// removeUp removes dirs[i] from inside held[i+1], deepest first, reopening
// each stretch between two kept handles once, and stops at the first
// directory that is not empty.
func (c *dirChain) removeUp() {
	held := c.held
	for i := range c.names {
		if held[i+1] == nil {
			j := i + 1
			for held[j] == nil {
				j++
			}
			c.open(i+1, j)
		}
		if held[i] != nil {
			held[i].Close()
			held[i] = nil
		}
		p := held[i+1]
		if p == nil {
			continue // a directory above dirs[i] is gone, and so is it
		}
		fi, err := p.Lstat(c.names[i])
		if err != nil || !fi.IsDir() {
			continue
		}
		// Removing a non-empty directory fails: that is the check.
		if p.Remove(c.names[i]) != nil {
			return
		}
	}
}

// removeDirs1 removes the directory dr if it is an empty real directory,
// and reports whether removing the next one up may go on.
func (w *Workspace) removeDirs1(dr string) bool {
	if _, ok := vcsElem(dr); ok {
		return false
	}
	pd, b, e, err := w.parent(dr, false)
	if err != nil || e != nil {
		return true
	}
	defer pd.close()
	fi, err := pd.r.Lstat(b)
	if err != nil || !fi.IsDir() {
		return true
	}
	// Removing a non-empty directory fails: that is the check.
	return pd.r.Remove(b) == nil
}

// SyncDirs makes the renames, removals and directory creations of an
// operation durable: it fsyncs, once each, every existing directory on the
// way to the paths rels (the root included), opening each once (see
// walkDirs). Directories reached only
// through a symlink are skipped, as every write there was. Windows cannot
// fsync a directory; there it does nothing.
func (w *Workspace) SyncDirs(rels []string) error {
	err := w.walkDirs(rels, func(p string, r *os.Root) error {
		f, err := r.Open(".")
		if err == nil {
			err = w.syncDir(f)
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("sync directory %q: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}
