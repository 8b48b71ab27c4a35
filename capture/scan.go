package capture

import (
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
	Stats    []checkpoints.StatEntry
	Read     int // files read (cache misses)
	Reused   int // files whose blob id came from the stat cache
	// CacheUnchanged says Stats holds exactly the cache the scan was
	// given: every entry was reused as it was, and no other file found.
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
// touches them); files over MaxFileSize and directories with more than
// MaxDirEntries entries are skipped and listed in Manifest.Skips. A file
// whose size, mtime, ctime, inode and mode match its cache entry, and whose
// entry is not racy, is not read again.
//
// Directories are walked in parallel (at most GOMAXPROCS+1 at a time),
// each through its own handle opened inside its parent's; files are read
// and hashed by two workers.
func (c *Capturer) Scan(ctx context.Context, o ScanOptions, cache map[string]checkpoints.StatEntry, put PutFunc) (ScanResult, error) {
	o = o.withDefaults(c.ws)
	ctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()
	w := &walker{c: c, o: o, ctx: ctx, cache: cache, jobs: make(chan scanJob, 256)}
	w.ign, _ = o.Ignore.(*Ignore)
	w.res.Manifest.Files = make([]checkpoints.ManifestEntry, 0, len(cache))
	w.res.Stats = make([]checkpoints.StatEntry, 0, len(cache))
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
			var files, changed []checkpoints.ManifestEntry
			var stats []checkpoints.StatEntry
			known := 0 // files read that have a cache entry
			for j := range w.jobs {
				if ctx.Err() != nil {
					j.f.Close()
					continue
				}
				// A changed file's content at the last scan is the
				// base its new version may be stored as a delta of.
				fctx := cas.WithBase(ctx, cache[j.rel].Blob)
				e, st, err := c.scanFile(fctx, j.rel, j.f, j.fi, j.at, put)
				if err != nil {
					w.fail(err)
					continue
				}
				files, stats = append(files, e), append(stats, st)
				if len(cache) == 0 {
					continue // a first scan: nothing to tell changes from
				}
				old, ok := cache[j.rel]
				if ok {
					known++
				}
				if !ok || old.Blob != e.Blob || old.Mode != e.Mode || old.Size != e.Size {
					changed = append(changed, e)
				}
			}
			w.mu.Lock()
			w.res.Manifest.Files = append(w.res.Manifest.Files, files...)
			w.res.Stats = append(w.res.Stats, stats...)
			w.res.Read += len(files)
			w.known += known
			w.changed = append(w.changed, changed...)
			if len(cache) > 0 {
				for _, e := range files {
					w.read = append(w.read, e.Path)
				}
			}
			w.mu.Unlock()
		})
	}
	w.walk(c.ws.dir, "")
	w.dirs.Wait()
	close(w.jobs)
	workers.Wait()
	if w.err != nil {
		if errors.Is(w.err, context.DeadlineExceeded) {
			return ScanResult{}, fmt.Errorf("capture: %w (%s)", ErrScanBudget, o.Budget)
		}
		return ScanResult{}, w.err
	}
	res := w.res
	res.CacheUnchanged = res.Read == 0 && res.Reused == len(cache)
	byPath := func(a, b checkpoints.ManifestEntry) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(res.Manifest.Files, byPath)
	slices.SortFunc(res.Manifest.Skips, func(a, b checkpoints.ScanSkip) int { return strings.Compare(a.Path, b.Path) })
	if len(cache) == 0 {
		return res, nil // Since and Dirs nil: all of it is new
	}
	// How the files differ from the cache's: what was read and differs,
	// and the cache's paths the walk did not find.
	since := &checkpoints.ManifestChanges{Files: w.changed, Gone: []string{}}
	slices.SortFunc(since.Files, byPath)
	if res.Reused+w.known < len(cache) {
		for p := range cache {
			if _, found := slices.BinarySearchFunc(res.Manifest.Files, p, func(e checkpoints.ManifestEntry, p string) int { return strings.Compare(e.Path, p) }); !found {
				since.Gone = append(since.Gone, p)
			}
		}
		slices.Sort(since.Gone)
	}
	res.Manifest.Since = since
	res.Dirs = map[string]bool{}
	for _, e := range w.read {
		res.Dirs[path.Dir(e)] = true
	}
	for _, p := range since.Gone {
		res.Dirs[path.Dir(p)] = true
	}
	if res.Dirs["."] {
		delete(res.Dirs, ".")
		res.Dirs[""] = true
	}
	return res, nil
}

// scanJob is a file the walk opened for a worker to read and hash.
type scanJob struct {
	rel string
	f   *os.File // open for reading; the worker closes it
	fi  fs.FileInfo
	at  int64
}

// walker is one Scan's walk of the workspace.
type walker struct {
	c     *Capturer
	o     ScanOptions
	ctx   context.Context
	cache map[string]checkpoints.StatEntry
	ign   *Ignore // o.Ignore when it is the workspace's rules: matched per directory
	jobs  chan scanJob
	// spare holds a token per directory walk running in a goroutine of
	// its own; when it is full a directory is walked in its parent's.
	spare chan struct{}
	dirs  sync.WaitGroup
	fail  func(error) // records the first error and stops the walk

	found    atomic.Int64 // files the walk let through, for o.Progress
	progMu   sync.Mutex
	reported int64

	mu      sync.Mutex
	err     error
	res     ScanResult
	read    []string                    // files read
	known   int                         // files read that have a cache entry
	changed []checkpoints.ManifestEntry // files read whose entry is not the cache's
}

// walk reads the open directory d (workspace-relative dir) and descends
// into each subdirectory through its own handle (openChild), so no element
// is followed through a symlink, even one swapped in meanwhile. A
// subdirectory goes to a goroutine of its own while one is spare. It
// reports its failure through w.fail.
func (w *walker) walk(d *os.Root, dir string) {
	if err := w.walkDir(d, dir); err != nil {
		w.fail(err)
	}
}

func (w *walker) walkDir(d *os.Root, dir string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	// Taken before the entries are stat'ed (ReadDir of a directory opened
	// in a root lstats each one): a stat entry never claims a check later
	// than the stat it holds, so the racy rule errs toward reading again.
	at := time.Now().UnixNano()
	f, err := d.Open(".")
	if err != nil {
		return fmt.Errorf("capture: scan %s: %w", dir, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("capture: scan %s: %w", dir, err)
	}
	if len(ents) > w.o.MaxDirEntries {
		w.mu.Lock()
		w.res.Manifest.Skips = append(w.res.Manifest.Skips, checkpoints.ScanSkip{Path: dir,
			Reason: fmt.Sprintf("directory has %d entries, over the limit of %d", len(ents), w.o.MaxDirEntries)})
		w.mu.Unlock()
		return nil
	}
	match := w.o.Ignore.Match
	if w.ign != nil {
		id, err := w.ign.enterDir(dir, func() (*ruleFile, error) { return w.c.dirRules(d, dir, ents, at) })
		if err != nil {
			return err
		}
		// The walk has ruled out VCS names and ignored ancestors, so the
		// directory's rule files decide.
		match = func(rel string, isDir bool) (bool, error) { return w.ign.matchRules(id, rel, isDir).excludes(), nil }
	}
	var (
		files   = make([]checkpoints.ManifestEntry, 0, len(ents))
		stats   = make([]checkpoints.StatEntry, 0, len(ents))
		skips   []checkpoints.ScanSkip
		subdirs []fs.DirEntry
	)
	defer func() {
		w.mu.Lock()
		w.res.Manifest.Files = append(w.res.Manifest.Files, files...)
		w.res.Stats = append(w.res.Stats, stats...)
		w.res.Manifest.Skips = append(w.res.Manifest.Skips, skips...)
		w.res.Reused += len(files)
		w.mu.Unlock()
	}()
	for _, e := range ents {
		name := e.Name()
		if isVCSName(name) {
			continue // never read, as a directory or a file (a worktree's .git)
		}
		rel := name
		if dir != "" {
			rel = dir + "/" + name
		}
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			continue // never followed, never recorded
		case t.IsDir():
			subdirs = append(subdirs, e)
		case t.IsRegular():
			if isStagingName(name) {
				continue // a rewind's temp file, in place for a moment
			}
			if ign, err := match(rel, false); err != nil {
				return err
			} else if ign {
				continue
			}
			w.progress()
			fi, err := e.Info() // the lstat ReadDir took
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone since the directory was read
			}
			if err != nil {
				return fmt.Errorf("capture: scan %s: %w", rel, err)
			}
			if fi.Size() > w.o.MaxFileSize {
				skips = append(skips, checkpoints.ScanSkip{Path: rel, Reason: fmt.Sprintf("%d bytes, over the size limit of %d", fi.Size(), w.o.MaxFileSize)})
				continue
			}
			if e, st, ok := cached(rel, fi, w.cache); ok { // most files of a re-scan: no hand-off
				files, stats = append(files, e), append(stats, st)
				continue
			}
			// Opened here, in the directory's handle, where the listing
			// just looked; read and hashed by a worker.
			rf, ofi, err := openRegular(d, name, fi)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) {
				continue // gone or replaced since the directory was read
			}
			if err != nil {
				return fmt.Errorf("capture: scan %s: %w", rel, err)
			}
			select {
			case w.jobs <- scanJob{rel, rf, ofi, at}:
			case <-w.ctx.Done():
				rf.Close()
				return w.ctx.Err()
			}
		}
	}
	for _, e := range subdirs {
		name := e.Name()
		rel := name
		if dir != "" {
			rel = dir + "/" + name
		}
		if ign, err := match(rel, true); err != nil {
			return err
		} else if ign {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone since the directory was read
		}
		sub, err := openChildAs(d, name, fi)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotRegular) {
			continue // gone or replaced since the directory was read
		}
		if err != nil {
			return fmt.Errorf("capture: scan %s: %w", rel, err)
		}
		select {
		case w.spare <- struct{}{}:
			w.dirs.Go(func() {
				defer func() { <-w.spare }()
				w.walk(sub, rel)
				sub.Close()
			})
		default:
			err = w.walkDir(sub, rel)
			sub.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

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
func (c *Capturer) dirRules(d *os.Root, dir string, ents []fs.DirEntry, at int64) (*ruleFile, error) {
	i := slices.IndexFunc(ents, func(e fs.DirEntry) bool { return e.Name() == gitignoreName })
	if i < 0 || !ents[i].Type().IsRegular() {
		return nil, nil
	}
	rel := path.Join(dir, gitignoreName)
	fi, err := ents[i].Info()
	if err != nil {
		return nil, nil // gone since the directory was read
	}
	key := statKeyOf(fi)
	c.rulesMu.Lock()
	old, hit := c.rules[rel]
	c.rulesMu.Unlock()
	if hit && old.key == key && !old.key.racy(old.at) {
		return old.rules, nil
	}
	data, err := readRuleFileIn(d, gitignoreName, fi)
	if err != nil {
		return nil, fmt.Errorf("capture: read ignore rules %s: %w", rel, err)
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

func statKeyOf(fi fs.FileInfo) fileKey {
	mtime, ctime, inode := statKey(fi)
	return fileKey{size: fi.Size(), mtime: mtime, ctime: ctime, inode: inode, mode: fi.Mode()}
}

// racy reports whether the file may have changed without changing its
// stat since at (see checkpoints.RacyWindow).
func (k fileKey) racy(at int64) bool {
	return k.mtime >= at-int64(checkpoints.RacyWindow)
}

// readRuleFileIn reads the rule file name of the open directory d, fi
// being what its listing found there, as readRuleFile does by path: nil
// for none to read.
func readRuleFileIn(d *os.Root, name string, fi fs.FileInfo) ([]byte, error) {
	if fi.Size() >= maxRuleFileSize {
		return nil, nil
	}
	f, ofi, err := openRegular(d, name, fi)
	if err != nil {
		if noRules(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	return readRuleData(f, ofi)
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

// cached returns the manifest and stat entries of a file whose stat matches
// a cache entry that is not racy: its content is the cached blob.
func cached(rel string, fi fs.FileInfo, cache map[string]checkpoints.StatEntry) (checkpoints.ManifestEntry, checkpoints.StatEntry, bool) {
	e, ok := cache[rel]
	if !ok || e.Racy() {
		return checkpoints.ManifestEntry{}, checkpoints.StatEntry{}, false
	}
	mtime, ctime, inode := statKey(fi)
	if e.Size != fi.Size() || e.MTime != mtime || e.CTime != ctime || e.Inode != inode || e.Mode != fi.Mode().Perm() {
		return checkpoints.ManifestEntry{}, checkpoints.StatEntry{}, false
	}
	return checkpoints.ManifestEntry{Path: rel, Blob: e.Blob, Mode: e.Mode, Size: e.Size}, e, true
}
