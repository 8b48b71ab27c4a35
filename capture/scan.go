package capture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// Scan defaults.
const (
	DefaultMaxFileSize   = 10 << 20 // files over this are skipped, never deleted
	DefaultMaxDirEntries = 5000     // directories with more entries are skipped whole
	DefaultScanBudget    = 30 * time.Second
)

// ErrScanBudget is wrapped when a scan runs past its time budget; the
// turn then goes on without a manifest (edit-tool captures still work).
var ErrScanBudget = errors.New("scan stopped: over its time budget")

// ScanOptions tune Scan. Zero fields take the defaults.
type ScanOptions struct {
	MaxFileSize   int64
	MaxDirEntries int
	Budget        time.Duration
	// Ignore decides what the scan leaves out; nil means the workspace's
	// rules (.gitignore files, .ckptignore, built-in defaults).
	Ignore Matcher
	// Progress, if set, is called by the walk with the count of files it
	// has found so far, every 256 files. The walk runs at most 256 files
	// ahead of the hashing, so the count tracks the work done.
	Progress func(files int)
}

// Matcher says whether a workspace-relative path is ignored.
type Matcher interface {
	Match(rel string, isDir bool) (bool, error)
}

func (o ScanOptions) withDefaults(w *Workspace) ScanOptions {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxDirEntries <= 0 {
		o.MaxDirEntries = DefaultMaxDirEntries
	}
	if o.Budget <= 0 {
		o.Budget = DefaultScanBudget
	}
	if o.Ignore == nil {
		o.Ignore = w.Ignore()
	}
	return o
}

// ScanResult is what a scan saw: the manifest (files and skips) and the
// stat cache entries for the next scan.
type ScanResult struct {
	Manifest checkpoints.Manifest
	// Stats holds the stat cache entries of the directories in Dirs (all
	// of them when Dirs is nil) by directory, "" for the root, each sorted
	// by path: with the cache the scan started from they make the next
	// scan's (checkpoints.Index.SaveScanCache). A directory with none is
	// left out. The manifest's entries share their paths.
	Stats  map[string][]checkpoints.StatEntry
	Read   int // files read (cache misses)
	Reused int // files whose blob id came from the stat cache
	// CacheUnchanged says the scan's stat entries are exactly the cache
	// it was given: every entry was reused as it was, and no other file
	// found.
	CacheUnchanged bool
	// Dirs names every directory whose stat entries differ from the
	// cache's: where a file was read, or a cached file is gone; nil when
	// the cache was empty.
	Dirs map[string]bool
}

// Scan records every regular file of the workspace that the ignore rules
// let through: its blob id (through put: a batch's Put to store, Hash to
// only compare), mode and size. Ignored directories are pruned as the walk
// reaches them; symlinks are never followed (nor recorded: a rewind never
// touches them); files over MaxFileSize, directories with more than
// MaxDirEntries entries, files and directories it may not open (EACCES,
// EPERM: another user's) and directories below the root whose .gitignore
// it may not read are skipped and listed in Manifest.Skips. A file whose
// size, mtime, ctime, inode and mode match its cache entry (nil: an empty
// cache), and whose entry is not racy, is not read again.
//
// Directories are walked in parallel (at most GOMAXPROCS+1 at a time),
// each through its own handle opened inside its parent's; its listing is
// sorted and merged with the cache's entries of the directory. Files are
// read and hashed by two workers.
func (c *Capturer) Scan(ctx context.Context, o ScanOptions, cache *checkpoints.ScanCache, put PutFunc) (ScanResult, error) {
	o = o.withDefaults(c.ws)
	ctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()
	w := &walker{c: c, o: o, ctx: ctx, cache: cache, first: cache.Len() == 0, jobs: make(chan scanJob, 256), outs: map[string]*dirOut{}}
	w.ign, _ = o.Ignore.(*Ignore)
	w.spare = make(chan struct{}, runtime.GOMAXPROCS(0))
	w.fail = func(err error) {
		w.mu.Lock()
		if w.err == nil {
			w.err = err
			cancel()
		}
		w.mu.Unlock()
	}
	// Two workers read and hash; the first error stops the walk (fail
	// cancels ctx), and the workers drain the queue, closing its files.
	var workers sync.WaitGroup
	for range 2 {
		workers.Go(func() {
			for j := range w.jobs {
				if ctx.Err() != nil {
					j.f.Close()
					continue
				}
				// A changed file's content at the last scan is the
				// base its new version may be stored as a delta of.
				fctx := ctx
				if j.hasOld {
					fctx = cas.WithBase(ctx, j.old.Blob)
				}
				e, st, err := c.scanFile(fctx, j.rel, j.f, j.fi, j.at, put)
				if err != nil {
					w.fail(err)
					continue
				}
				// Beside the directory's entries (the walk appends its
				// own meanwhile); result merges them. A first scan keeps
				// only the stat entry, which the manifest's is made of
				// at the end (scanFile makes them alike).
				changed := !j.hasOld || j.old.Blob != e.Blob || j.old.Mode != e.Mode || j.old.Size != e.Size
				w.mu.Lock()
				w.nread++
				j.out.readStats = append(j.out.readStats, st)
				if !w.first {
					j.out.read = append(j.out.read, e)
					if changed {
						w.changed = append(w.changed, e)
					}
				}
				w.mu.Unlock()
			}
		})
	}
	if root, err := openScanRoot(c.ws.dir); err != nil {
		w.fail(fmt.Errorf("capture: scan: %w", err))
	} else {
		w.walk(root, "")
		root.close()
	}
	w.dirs.Wait()
	close(w.jobs)
	workers.Wait()
	if w.err != nil {
		if errors.Is(w.err, context.DeadlineExceeded) {
			return ScanResult{}, fmt.Errorf("capture: %w (%s)", ErrScanBudget, o.Budget)
		}
		return ScanResult{}, w.err
	}
	return w.result(), nil
}

// result puts together what the walk and the workers found.
func (w *walker) result() ScanResult {
	byPath := func(a, b checkpoints.ManifestEntry) int { return strings.Compare(a.Path, b.Path) }
	res := ScanResult{Read: w.nread, Reused: int(w.reused.Load()), Manifest: checkpoints.Manifest{Skips: w.skips}}
	slices.SortFunc(res.Manifest.Skips, func(a, b checkpoints.ScanSkip) int { return strings.Compare(a.Path, b.Path) })
	byPathStat := func(a, b checkpoints.StatEntry) int { return strings.Compare(a.Path, b.Path) }
	if w.first {
		// Every file was read (a directory's files all come from the
		// workers, as stat entries only): each directory's sorted, the
		// manifest made of them in path order, Since and Dirs nil.
		res.Stats = make(map[string][]checkpoints.StatEntry, len(w.outs))
		n := 0
		for d, o := range w.outs {
			o.stats, o.readStats = o.readStats, nil
			if len(o.stats) > 0 {
				slices.SortFunc(o.stats, byPathStat)
				res.Stats[d] = o.stats
				n += len(o.stats)
			}
		}
		res.Manifest.Files = make([]checkpoints.ManifestEntry, 0, n)
		if root := w.outs[""]; root != nil {
			res.Manifest.Files = w.emit("", root, res.Manifest.Files)
		}
		return res
	}
	since := &checkpoints.ManifestChanges{Files: w.changed, Gone: []string{}}
	// Files read go to their directory's entries, which are then sorted
	// again.
	n := 0
	for _, o := range w.outs {
		if len(o.read) > 0 {
			if len(o.files) == 0 {
				o.files, o.stats = o.read, o.readStats
			} else {
				o.files, o.stats = append(o.files, o.read...), append(o.stats, o.readStats...)
			}
			o.read, o.readStats = nil, nil
			slices.SortFunc(o.files, byPath)
			slices.SortFunc(o.stats, byPathStat)
		}
		n += len(o.files)
		since.Gone = append(since.Gone, o.gone...)
	}
	// Cached directories the walk did not enter (gone, ignored, skipped):
	// their files are gone.
	var buf []checkpoints.StatEntry
	for _, d := range w.cache.DirNames() {
		if _, ok := w.outs[d]; ok {
			continue
		}
		buf = w.cache.Dir(d, buf)
		for _, e := range buf {
			since.Gone = append(since.Gone, e.Path)
		}
		w.gone = append(w.gone, d)
	}
	res.Manifest.Files = make([]checkpoints.ManifestEntry, 0, n)
	if root := w.outs[""]; root != nil {
		res.Manifest.Files = w.emit("", root, res.Manifest.Files)
	}
	res.Dirs = map[string]bool{}
	res.Stats = map[string][]checkpoints.StatEntry{}
	for d, o := range w.outs {
		if o.changed {
			res.Dirs[d] = true
			if len(o.stats) > 0 {
				res.Stats[d] = o.stats
			}
		}
	}
	for _, d := range w.gone {
		res.Dirs[d] = true
	}
	slices.SortFunc(since.Files, byPath)
	slices.Sort(since.Gone)
	res.Manifest.Since = since
	res.CacheUnchanged = len(res.Dirs) == 0
	return res
}

// emit appends the files of directory dir (walked as o) and of its
// subdirectories to files in path order: a subdirectory's files come
// where its name followed by a slash sorts among the directory's files.
// A first scan's come from the directories' stat entries.
func (w *walker) emit(dir string, o *dirOut, files []checkpoints.ManifestEntry) []checkpoints.ManifestEntry {
	skip := 0
	if dir != "" {
		skip = len(dir) + 1
	}
	if w.first {
		i := 0
		add := func(stop string, last bool) {
			for ; i < len(o.stats) && (last || beforeDir(o.stats[i].Path[skip:], stop)); i++ {
				s := &o.stats[i]
				files = append(files, checkpoints.ManifestEntry{Path: s.Path, Blob: s.Blob, Mode: s.Mode, Size: s.Size})
			}
		}
		for _, sub := range o.subdirs {
			add(sub, false)
			rel := sub
			if dir != "" {
				rel = dir + "/" + sub
			}
			if so := w.outs[rel]; so != nil {
				files = w.emit(rel, so, files)
			}
		}
		add("", true)
		return files
	}
	i := 0
	for _, sub := range o.subdirs {
		for ; i < len(o.files) && beforeDir(o.files[i].Path[skip:], sub); i++ {
			files = append(files, o.files[i])
		}
		rel := sub
		if dir != "" {
			rel = dir + "/" + sub
		}
		if so := w.outs[rel]; so != nil {
			files = w.emit(rel, so, files)
		}
	}
	files = append(files, o.files[i:]...)
	o.files = nil // copied: let the collector have it
	return files
}

// beforeDir reports whether a file named name sorts before the paths
// under a sibling directory named dir (compares name with dir + "/").
func beforeDir(name, dir string) bool {
	n := min(len(name), len(dir))
	if c := strings.Compare(name[:n], dir[:n]); c != 0 {
		return c < 0
	}
	if len(name) == n {
		return true // a prefix of dir, or dir itself: shorter than dir + "/"
	}
	return name[n] < '/'
}

// compareDirNames orders sibling directories a and b as the paths under
// them sort: as a + "/" and b + "/".
func compareDirNames(a, b string) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 || len(a) == len(b) {
		return c
	}
	if len(a) < len(b) {
		return cmp.Compare('/', b[n])
	}
	return cmp.Compare(a[n], '/')
}

// unreadable is the skip reason of an entry the scan may not open (a
// file or directory of another user, mode 0600): "unreadable: permission
// denied".
func unreadable(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return unreadablePrefix + err.Error()
}

const unreadablePrefix = "unreadable: "

// SkippedUnreadable reports whether a scan skip's reason is that the scan
// may not open the entry (see unreadable).
func SkippedUnreadable(reason string) bool { return strings.HasPrefix(reason, unreadablePrefix) }

// progress counts a file the walk let through and tells o.Progress every
// 256 files, in order.
func (w *walker) progress() {
	n := w.found.Add(1)
	if w.o.Progress == nil || n%256 != 0 {
		return
	}
	w.progMu.Lock()
	defer w.progMu.Unlock()
	if n > w.reported {
		w.reported = n
		w.o.Progress(int(n))
	}
}

// dirRules returns the .gitignore rules of the open directory d
// (workspace-relative dir, listed as ents), nil for none: no such entry,
// or one that is not a regular file (a symlink is never followed), or one
// of maxRuleFileSize or more. A file whose stat matches what the previous
// scan parsed, and is not racy (at: when the listing stat'ed it), is not
// read again.
func (c *Capturer) dirRules(d scanDir, dir string, ents []dirent, at int64) (*ruleFile, error) {
	i := slices.IndexFunc(ents, func(e dirent) bool { return e.name == gitignoreName })
	if i < 0 || !ents[i].mode.IsRegular() {
		return nil, nil
	}
	e := &ents[i]
	rel := path.Join(dir, gitignoreName)
	key := e.key()
	c.rulesMu.Lock()
	old, hit := c.rules[rel]
	c.rulesMu.Unlock()
	if hit && old.key == key && !old.key.racy(old.at) {
		return old.rules, nil
	}
	var data []byte
	if e.size < maxRuleFileSize {
		f, ofi, err := d.openFile(e)
		if err != nil && !noRules(err) {
			return nil, fmt.Errorf("capture: read ignore rules %s: %w", rel, err)
		}
		if err == nil {
			data, err = readRuleData(f, ofi)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("capture: read ignore rules %s: %w", rel, err)
			}
		}
	}
	var rf *ruleFile
	if data != nil {
		rf = parseRules(data, rel)
	}
	c.rulesMu.Lock()
	if c.rules == nil {
		c.rules = map[string]parsedRules{}
	}
	c.rules[rel] = parsedRules{key: key, at: at, rules: rf}
	c.rulesMu.Unlock()
	return rf, nil
}

// parsedRules is a .gitignore a scan parsed, kept for the next scan.
type parsedRules struct {
	key   fileKey
	at    int64 // when the stat was taken
	rules *ruleFile
}

// fileKey is what says a file is unchanged: the stat cache's fields.
type fileKey struct {
	size, mtime, ctime int64
	inode              uint64
	mode               fs.FileMode
}

// racy reports whether the file may have changed without changing its
// stat since at (see checkpoints.RacyWindow).
func (k fileKey) racy(at int64) bool {
	return k.mtime >= at-int64(checkpoints.RacyWindow)
}

// scanFile reads the open file f (fi: its descriptor's stat) into put and
// returns its manifest entry and fresh stat entry. It closes f.
func (c *Capturer) scanFile(ctx context.Context, rel string, f *os.File, fi fs.FileInfo, at int64, put PutFunc) (checkpoints.ManifestEntry, checkpoints.StatEntry, error) {
	defer f.Close()
	id, n, err := put(ctx, f)
	if err != nil {
		return checkpoints.ManifestEntry{}, checkpoints.StatEntry{}, fmt.Errorf("capture: scan %s: %w", rel, err)
	}
	st := readEntry(rel, fi, id, n, at)
	return checkpoints.ManifestEntry{Path: rel, Blob: id, Mode: st.Mode, Size: n}, st, nil
}

// readEntry describes a read of n bytes, hashing to id, of the file at rel
// whose open descriptor's stat was fi, taken no earlier than at: the stat
// entry that vouches for the file while its stat stays the same. A file
// whose size changed while it was read gets an entry that is racy, so it
// is read again.
func readEntry(rel string, fi fs.FileInfo, id cas.ID, n, at int64) checkpoints.StatEntry {
	mtime, ctime, inode := statKey(fi)
	st := checkpoints.StatEntry{Path: rel, Size: n, MTime: mtime, CTime: ctime, Inode: inode, Mode: fi.Mode().Perm(), Blob: id, Checked: at}
	if n != fi.Size() {
		st.Checked = mtime // changed while read: racy
	}
	return st
}

// vouches reports whether old, a stat entry, says that the file whose stat
// key is k holds old's blob: the key matches and old is not racy.
func (k fileKey) vouches(old *checkpoints.StatEntry) bool {
	return !old.Racy() && old.Size == k.size && old.MTime == k.mtime && old.CTime == k.ctime && old.Inode == k.inode && old.Mode == k.mode.Perm()
}

// keyOf returns a file's stat key from its stat.
func keyOf(fi fs.FileInfo) fileKey {
	mtime, ctime, inode := statKey(fi)
	return fileKey{size: fi.Size(), mtime: mtime, ctime: ctime, inode: inode, mode: fi.Mode()}
}

// cacheHit reports whether the listing's entry e matches its cache entry
// old, and old is not racy: the file's content is old's blob.
func cacheHit(old *checkpoints.StatEntry, e *dirent) bool { return e.key().vouches(old) }
