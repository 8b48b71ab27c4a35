package capture

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
)

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

// walkBufs are one directory walk's pooled buffers: its listing, its cache
// entries and the indexes of those reused. They go back to their pools
// before the subdirectories are walked (those walked in this goroutine
// take their own), or on an early return.
type walkBufs struct {
	list     *[]dirent
	cache    *[]checkpoints.StatEntry
	hits     *[]int32
	released bool
}

func getWalkBufs() walkBufs {
	return walkBufs{
		list:  direntPool.Get().(*[]dirent),
		cache: cachePool.Get().(*[]checkpoints.StatEntry),
		hits:  hitsPool.Get().(*[]int32),
	}
}

func (b *walkBufs) release() {
	if b.released {
		return
	}
	b.released = true
	clear(*b.list)
	*b.list = (*b.list)[:0]
	direntPool.Put(b.list)
	clear(*b.cache)
	*b.cache = (*b.cache)[:0]
	cachePool.Put(b.cache)
	*b.hits = (*b.hits)[:0]
	hitsPool.Put(b.hits)
}

// dirWalk is the walk of one directory's listing against its cache
// entries.
type dirWalk struct {
	w       *walker
	d       scanDir
	dir     string
	at      int64                   // when the listing's entries were stat'ed
	rules   *ignoreDir              // dir's ignore rules, when the walker matches per directory
	cached  []checkpoints.StatEntry // the cache's entries of dir, sorted by path
	ci      int                     // the next entry of cached
	skip    int                     // the length of a path's directory prefix
	out     *dirOut
	hits    []int32  // cached's entries reused
	subdirs []dirent // the listing's directories, copied
}

func (w *walker) walkDir(d scanDir, dir string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	// Taken before the entries are stat'ed: a stat entry never claims a
	// check later than the stat it holds, so the racy rule errs toward
	// reading again.
	at := time.Now().UnixNano()
	bufs := getWalkBufs()
	defer bufs.release()
	ents, ok, err := w.list(d, dir, bufs.list)
	if !ok || err != nil {
		return err
	}
	rules, ok, err := w.enterDir(d, dir, ents, at)
	if !ok || err != nil {
		return err
	}
	dw := dirWalk{w: w, d: d, dir: dir, at: at, rules: rules}
	dw.cached = w.cache.Dir(dir, (*bufs.cache)[:0])
	*bufs.cache = dw.cached
	if dir != "" {
		dw.skip = len(dir) + 1
	}
	dw.out = &dirOut{files: make([]checkpoints.ManifestEntry, 0, len(dw.cached)), changed: w.first}
	if w.first { // the workers add a stat entry per regular file listed
		n := 0
		for i := range ents {
			if ents[i].mode.IsRegular() {
				n++
			}
		}
		dw.out.readStats = make([]checkpoints.StatEntry, 0, n)
	}
	dw.hits = (*bufs.hits)[:0]
	for i := range ents {
		if err := dw.entry(&ents[i]); err != nil {
			return err
		}
	}
	dw.finish()
	w.reused.Add(int64(len(dw.hits)))
	*bufs.hits = dw.hits // grown: the pool keeps it
	bufs.release()
	w.mu.Lock()
	w.outs[dir] = dw.out
	w.mu.Unlock()
	return dw.walkSubdirs()
}

// list reads the directory d into buf's storage. It returns false, with
// nothing to walk, when the directory is skipped: unreadable, or holding
// more than MaxDirEntries entries.
func (w *walker) list(d scanDir, dir string, buf *[]dirent) ([]dirent, bool, error) {
	ents, err := d.list((*buf)[:0])
	*buf = ents
	if err != nil && dir != "" && errors.Is(err, fs.ErrNotExist) {
		// Removed since its parent's walk opened it (getdents on a
		// deleted directory fails with ENOENT): it holds nothing, as if
		// it had gone a moment earlier. The root's removal stays an error.
		ents, err = ents[:0], nil
	}
	if err != nil && dir != "" && errors.Is(err, fs.ErrPermission) {
		w.skip(dir, unreadable(err))
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("capture: scan %s: %w", dir, err)
	}
	if len(ents) > w.o.MaxDirEntries {
		w.skip(dir, fmt.Sprintf("directory has %d entries, over the limit of %d", len(ents), w.o.MaxDirEntries))
		return nil, false, nil
	}
	return ents, true, nil
}

// enterDir enters dir's ignore rules when the walk matches the
// workspace's rules per directory (nil otherwise). It returns false, with
// nothing to walk, when the directory's rule file cannot be read.
func (w *walker) enterDir(d scanDir, dir string, ents []dirent, at int64) (*ignoreDir, bool, error) {
	if w.ign == nil {
		return nil, true, nil
	}
	id, err := w.ign.enterDir(dir, func() (*ruleFile, error) { return w.c.dirRules(d, dir, ents, at) })
	if err != nil && dir != "" && errors.Is(err, fs.ErrPermission) {
		// What its rules leave out is unknown: none of it is
		// recorded, so a rewind leaves all of it alone.
		w.skip(dir, "its "+gitignoreName+" is "+unreadable(err))
		return nil, false, nil
	}
	return id, err == nil, err
}

// match reports whether the ignore rules leave rel, an entry of the
// directory, out.
func (dw *dirWalk) match(rel string, isDir bool) (bool, error) {
	if dw.rules == nil {
		return dw.w.o.Ignore.Match(rel, isDir)
	}
	// The walk has ruled out VCS names and ignored ancestors, so the
	// directory's rule files decide.
	return dw.w.ign.matchRules(dw.rules, rel, isDir).excludes(), nil
}

// neverRecorded reports whether the listing's entry e of dir is never
// read (a VCS name, as a directory or a file: a worktree's .git; agent or
// ckpt configuration), never followed nor recorded (a symlink), special,
// or a rewind's temp file.
func neverRecorded(dir string, e *dirent) bool {
	name := e.name
	return isVCSName(name) || dir != "" && dir[0] == '.' && IsConfig(dir+"/"+name) ||
		e.mode&fs.ModeSymlink != 0 || !(e.mode.IsDir() || e.mode.IsRegular()) ||
		e.mode.IsRegular() && isStagingName(name)
}

// cachedEntry returns the cache's entry of the listing's name, nil if
// none. The cache's entries of names before it were not found.
func (dw *dirWalk) cachedEntry(name string) *checkpoints.StatEntry {
	for ; dw.ci < len(dw.cached) && dw.cached[dw.ci].Path[dw.skip:] < name; dw.ci++ {
		dw.out.gone = append(dw.out.gone, dw.cached[dw.ci].Path)
	}
	if dw.ci < len(dw.cached) && dw.cached[dw.ci].Path[dw.skip:] == name {
		dw.ci++
		return &dw.cached[dw.ci-1]
	}
	return nil
}

// entry walks the listing's entry e: a subdirectory is kept for later, a
// file the cache vouches for is recorded as it was, another is handed to
// a worker.
func (dw *dirWalk) entry(e *dirent) error {
	old := dw.cachedEntry(e.name)
	if neverRecorded(dw.dir, e) {
		dw.out.forget(old)
		return nil
	}
	if e.mode.IsDir() {
		dw.out.forget(old) // a file then
		dw.subdirs = append(dw.subdirs, *e)
		return nil
	}
	var rel string
	if old != nil {
		rel = old.Path // the same string, without building it
	} else if dw.dir != "" {
		rel = dw.dir + "/" + e.name
	} else {
		rel = e.name
	}
	if ign, err := dw.match(rel, false); err != nil {
		return err
	} else if ign {
		dw.out.forget(old)
		return nil
	}
	w := dw.w
	w.progress()
	if e.size > w.o.MaxFileSize {
		dw.out.skip(w, rel, fmt.Sprintf("%d bytes, over the size limit of %d", e.size, w.o.MaxFileSize), old)
		return nil
	}
	if old != nil && cacheHit(old, e) { // most files of a re-scan: no hand-off
		dw.out.files = append(dw.out.files, checkpoints.ManifestEntry{Path: old.Path, Blob: old.Blob, Mode: old.Mode, Size: old.Size})
		dw.hits = append(dw.hits, int32(dw.ci-1))
		return nil
	}
	dw.out.changed = true
	return dw.read(e, rel, old)
}

// read opens the file e (rel) in the directory's handle, where the
// listing just looked, for a worker to read and hash.
func (dw *dirWalk) read(e *dirent, rel string, old *checkpoints.StatEntry) error {
	w := dw.w
	rf, ofi, err := dw.d.openFile(e)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) {
		dw.out.forget(old)
		return nil // gone or replaced since the directory was read
	}
	if errors.Is(err, fs.ErrPermission) {
		dw.out.skip(w, rel, unreadable(err), old)
		return nil
	}
	if err != nil {
		return fmt.Errorf("capture: scan %s: %w", rel, err)
	}
	j := scanJob{rel: rel, f: rf, fi: ofi, at: dw.at, out: dw.out}
	if old != nil {
		j.old, j.hasOld = *old, true
	}
	select {
	case w.jobs <- j:
		return nil
	case <-w.ctx.Done():
		rf.Close()
		return w.ctx.Err()
	}
}

// finish notes the cache's entries past the listing's last name as gone
// and, when the directory changed, starts its stat entries with those
// reused.
func (dw *dirWalk) finish() {
	out := dw.out
	for ; dw.ci < len(dw.cached); dw.ci++ {
		out.gone = append(out.gone, dw.cached[dw.ci].Path)
	}
	if len(out.gone) > 0 {
		out.changed = true
	}
	if out.changed {
		out.stats = make([]checkpoints.StatEntry, 0, len(out.files))
		for _, h := range dw.hits {
			out.stats = append(out.stats, dw.cached[h])
		}
	}
}

// walkSubdirs walks the directory's subdirectories, in the order of the
// paths under them (emit): matched, opened, walked, each in a goroutine of
// its own while one is spare.
func (dw *dirWalk) walkSubdirs() error {
	w, d, dir, subdirs, out := dw.w, dw.d, dw.dir, dw.subdirs, dw.out
	slices.SortFunc(subdirs, func(a, b dirent) int { return compareDirNames(a.name, b.name) })
	for i := range subdirs {
		e := &subdirs[i]
		rel := e.name
		if dir != "" {
			rel = dir + "/" + e.name
		}
		if ign, err := dw.match(rel, true); err != nil {
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

// forget notes the cache's entry old, if any, as gone.
func (o *dirOut) forget(old *checkpoints.StatEntry) {
	if old != nil {
		o.gone = append(o.gone, old.Path)
	}
}

// skip records the file rel as skipped for reason; its cache entry, if
// any, is gone.
func (o *dirOut) skip(w *walker, rel, reason string, old *checkpoints.StatEntry) {
	o.forget(old)
	w.skip(rel, reason)
}

// skip records rel, a file or a directory, as skipped for reason: not in
// the manifest, and left alone by rewinds.
func (w *walker) skip(rel, reason string) {
	w.mu.Lock()
	w.skips = append(w.skips, checkpoints.ScanSkip{Path: rel, Reason: reason})
	w.mu.Unlock()
}
