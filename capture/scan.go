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
	"sync/atomic"
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

// scanJob is a file the walk opened for a worker to read and hash.
type scanJob struct {
	rel    string
	f      *os.File // open for reading; the worker closes it
	fi     fs.FileInfo
	at     int64
	out    *dirOut
	old    checkpoints.StatEntry // the cache's entry, when hasOld
	hasOld bool
}

// dirOut is what the walk found in one directory.
type dirOut struct {
	files   []checkpoints.ManifestEntry // sorted by path
	stats   []checkpoints.StatEntry     // when changed: every stat entry of the directory
	subdirs []string                    // names of the subdirectories walked into (compareDirNames order)
	gone    []string                    // cache entries not found as regular files
	changed bool                        // its stat entries differ from the cache's
	// read and readStats are the files the workers read, under the
	// walker's mu; result adds them to files and stats.
	read      []checkpoints.ManifestEntry
	readStats []checkpoints.StatEntry
}

// walker is one Scan's walk of the workspace.
type walker struct {
	c     *Capturer
	o     ScanOptions
	ctx   context.Context
	cache *checkpoints.ScanCache
	first bool    // the cache is empty
	ign   *Ignore // o.Ignore when it is the workspace's rules: matched per directory
	jobs  chan scanJob
	// spare holds a token per directory walk running in a goroutine of
	// its own; when it is full a directory is walked in its parent's.
	spare chan struct{}
	dirs  sync.WaitGroup
	fail  func(error) // records the first error and stops the walk

	found    atomic.Int64 // files the walk let through, for o.Progress
	reused   atomic.Int64
	progMu   sync.Mutex
	reported int64

	mu      sync.Mutex
	err     error
	outs    map[string]*dirOut // by directory walked
	skips   []checkpoints.ScanSkip
	nread   int                         // files read
	changed []checkpoints.ManifestEntry // files read whose entry is not the cache's
	gone    []string                    // cached directories not walked
}

// walk reads the open directory d (workspace-relative dir) and descends
// into each subdirectory through its own handle (openChild), so no element
// is followed through a symlink, even one swapped in meanwhile. A
// subdirectory goes to a goroutine of its own while one is spare. It
// reports its failure through w.fail.
func (w *walker) walk(d scanDir, dir string) {
	if err := w.walkDir(d, dir); err != nil {
		w.fail(err)
	}
}

// direntPool holds listing buffers; cachePool the buffers a directory's
// cache entries are decoded into; hitsPool those of the entries reused.
var (
	direntPool = sync.Pool{New: func() any { return new([]dirent) }}
	cachePool  = sync.Pool{New: func() any { return new([]checkpoints.StatEntry) }}
	hitsPool   = sync.Pool{New: func() any { return new([]int32) }}
)

func (w *walker) walkDir(d scanDir, dir string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	// Taken before the entries are stat'ed: a stat entry never claims a
	// check later than the stat it holds, so the racy rule errs toward
	// reading again.
	at := time.Now().UnixNano()
	// The listing and the cache's entries go back to their pools before
	// the subdirectories are walked (those walked in this goroutine take
	// their own), or on an early return.
	lp := direntPool.Get().(*[]dirent)
	cp := cachePool.Get().(*[]checkpoints.StatEntry)
	hp := hitsPool.Get().(*[]int32)
	released := false
	release := func() {
		if !released {
			released = true
			clear(*lp)
			*lp = (*lp)[:0]
			direntPool.Put(lp)
			clear(*cp)
			*cp = (*cp)[:0]
			cachePool.Put(cp)
			*hp = (*hp)[:0]
			hitsPool.Put(hp)
		}
	}
	defer release()
	ents, err := d.list((*lp)[:0])
	*lp = ents
	if err != nil && dir != "" && errors.Is(err, fs.ErrNotExist) {
		// Removed since its parent's walk opened it (getdents on a
		// deleted directory fails with ENOENT): it holds nothing, as if
		// it had gone a moment earlier. The root's removal stays an error.
		ents, err = ents[:0], nil
	}
	if err != nil && dir != "" && errors.Is(err, fs.ErrPermission) {
		w.skip(dir, unreadable(err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("capture: scan %s: %w", dir, err)
	}
	if len(ents) > w.o.MaxDirEntries {
		w.mu.Lock()
		w.skips = append(w.skips, checkpoints.ScanSkip{Path: dir,
			Reason: fmt.Sprintf("directory has %d entries, over the limit of %d", len(ents), w.o.MaxDirEntries)})
		w.mu.Unlock()
		return nil
	}
	match := w.o.Ignore.Match
	if w.ign != nil {
		id, err := w.ign.enterDir(dir, func() (*ruleFile, error) { return w.c.dirRules(d, dir, ents, at) })
		if err != nil && dir != "" && errors.Is(err, fs.ErrPermission) {
			// What its rules leave out is unknown: none of it is
			// recorded, so a rewind leaves all of it alone.
			w.skip(dir, "its "+gitignoreName+" is "+unreadable(err))
			return nil
		}
		if err != nil {
			return err
		}
		// The walk has ruled out VCS names and ignored ancestors, so the
		// directory's rule files decide.
		match = func(rel string, isDir bool) (bool, error) { return w.ign.matchRules(id, rel, isDir).excludes(), nil }
	}
	cached := w.cache.Dir(dir, (*cp)[:0])
	*cp = cached
	skip := 0 // the length of a path's directory prefix
	if dir != "" {
		skip = len(dir) + 1
	}
	out := &dirOut{files: make([]checkpoints.ManifestEntry, 0, len(cached)), changed: w.first}
	if w.first { // the workers add a stat entry per regular file listed
		n := 0
		for i := range ents {
			if ents[i].mode.IsRegular() {
				n++
			}
		}
		out.readStats = make([]checkpoints.StatEntry, 0, n)
	}
	var (
		hits    = (*hp)[:0] // cached's entries reused
		subdirs []dirent    // ents' directories, copied
		ci      int         // the next cache entry
	)
	for i := range ents {
		e := &ents[i]
		// The cache's entries of names before this one were not found.
		for ; ci < len(cached) && cached[ci].Path[skip:] < e.name; ci++ {
			out.gone = append(out.gone, cached[ci].Path)
		}
		var old *checkpoints.StatEntry
		if ci < len(cached) && cached[ci].Path[skip:] == e.name {
			old = &cached[ci]
			ci++
		}
		name := e.name
		if isVCSName(name) || dir != "" && dir[0] == '.' && IsConfig(dir+"/"+name) || e.mode&fs.ModeSymlink != 0 || !(e.mode.IsDir() || e.mode.IsRegular()) || e.mode.IsRegular() && isStagingName(name) {
			// Never read (a VCS name, as a directory or a file: a
			// worktree's .git; agent or ckpt configuration), never
			// followed nor recorded (a symlink), special, or a
			// rewind's temp file.
			if old != nil {
				out.gone = append(out.gone, old.Path)
			}
			continue
		}
		if e.mode.IsDir() {
			if old != nil {
				out.gone = append(out.gone, old.Path) // a file then
			}
			subdirs = append(subdirs, *e)
			continue
		}
		var rel string
		if old != nil {
			rel = old.Path // the same string, without building it
		} else if dir != "" {
			rel = dir + "/" + name
		} else {
			rel = name
		}
		if ign, err := match(rel, false); err != nil {
			return err
		} else if ign {
			if old != nil {
				out.gone = append(out.gone, old.Path)
			}
			continue
		}
		w.progress()
		if e.size > w.o.MaxFileSize {
			out.skip(w, rel, fmt.Sprintf("%d bytes, over the size limit of %d", e.size, w.o.MaxFileSize), old)
			continue
		}
		if old != nil && cacheHit(old, e) { // most files of a re-scan: no hand-off
			out.files = append(out.files, checkpoints.ManifestEntry{Path: old.Path, Blob: old.Blob, Mode: old.Mode, Size: old.Size})
			hits = append(hits, int32(ci-1))
			continue
		}
		out.changed = true
		// Opened here, in the directory's handle, where the listing
		// just looked; read and hashed by a worker.
		rf, ofi, err := d.openFile(e)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) {
			if old != nil {
				out.gone = append(out.gone, old.Path)
			}
			continue // gone or replaced since the directory was read
		}
		if errors.Is(err, fs.ErrPermission) {
			out.skip(w, rel, unreadable(err), old)
			continue
		}
		if err != nil {
			return fmt.Errorf("capture: scan %s: %w", rel, err)
		}
		j := scanJob{rel: rel, f: rf, fi: ofi, at: at, out: out}
		if old != nil {
			j.old, j.hasOld = *old, true
		}
		select {
		case w.jobs <- j:
		case <-w.ctx.Done():
			rf.Close()
			return w.ctx.Err()
		}
	}
	for ; ci < len(cached); ci++ {
		out.gone = append(out.gone, cached[ci].Path)
	}
	if len(out.gone) > 0 {
		out.changed = true
	}
	if out.changed {
		out.stats = make([]checkpoints.StatEntry, 0, len(out.files))
		for _, h := range hits {
			out.stats = append(out.stats, cached[h])
		}
	}
	w.reused.Add(int64(len(hits)))
	*hp = hits // grown: the pool keeps it
	release()
	w.mu.Lock()
	w.outs[dir] = out
	w.mu.Unlock()
	// Subdirectories, in the order of the paths under them (emit):
	// matched, opened, walked.
	slices.SortFunc(subdirs, func(a, b dirent) int { return compareDirNames(a.name, b.name) })
	for i := range subdirs {
		e := &subdirs[i]
		rel := e.name
		if dir != "" {
			rel = dir + "/" + e.name
		}
		if ign, err := match(rel, true); err != nil {
			return err
		} else if ign {
			continue
		}
		sub, err := d.openDir(e)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotRegular) {
			continue // gone or replaced since the directory was read
		}
		if errors.Is(err, fs.ErrPermission) {
			w.skip(rel, unreadable(err))
			continue
		}
		if err != nil {
			return fmt.Errorf("capture: scan %s: %w", rel, err)
		}
		out.subdirs = append(out.subdirs, e.name)
		select {
		case w.spare <- struct{}{}:
			w.dirs.Go(func() {
				defer func() { <-w.spare }()
				w.walk(sub, rel)
				sub.close()
			})
		default:
			err = w.walkDir(sub, rel)
			sub.close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// skip records the file rel as skipped for reason; its cache entry, if
// any, is gone.
func (o *dirOut) skip(w *walker, rel, reason string, old *checkpoints.StatEntry) {
	if old != nil {
		o.gone = append(o.gone, old.Path)
	}
	w.skip(rel, reason)
}

// skip records rel, a file or a directory, as skipped for reason: not in
// the manifest, and left alone by rewinds.
func (w *walker) skip(rel, reason string) {
	w.mu.Lock()
	w.skips = append(w.skips, checkpoints.ScanSkip{Path: rel, Reason: reason})
	w.mu.Unlock()
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
	// Describe what was read: the open descriptor's stat.
	mtime, ctime, inode := statKey(fi)
	st := checkpoints.StatEntry{Path: rel, Size: n, MTime: mtime, CTime: ctime, Inode: inode, Mode: fi.Mode().Perm(), Blob: id, Checked: at}
	if n != fi.Size() {
		st.Checked = mtime // changed while read: racy, so the next scan reads it again
	}
	return checkpoints.ManifestEntry{Path: rel, Blob: id, Mode: st.Mode, Size: n}, st, nil
}

// cacheHit reports whether the listing's entry e matches its cache entry
// old, and old is not racy: the file's content is old's blob.
func cacheHit(old *checkpoints.StatEntry, e *dirent) bool {
	k := e.key()
	return !old.Racy() && old.Size == k.size && old.MTime == k.mtime && old.CTime == k.ctime && old.Inode == k.inode && old.Mode == k.mode.Perm()
}
