package capture

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"golang.org/x/sync/errgroup"
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
}

// Scan records every regular file of the workspace that the ignore rules
// let through: its blob id (through put: a batch's Put to store, Hash to
// only compare), mode and size. Ignored directories are pruned as the walk
// reaches them; symlinks are never followed (nor recorded: a rewind never
// touches them); files over MaxFileSize and directories with more than
// MaxDirEntries entries are skipped and listed in Manifest.Skips. A file
// whose size, mtime, ctime, inode and mode match its cache entry, and whose
// entry is not racy, is not read again. Files are hashed by two workers.
func (c *Capturer) Scan(ctx context.Context, o ScanOptions, cache map[string]checkpoints.StatEntry, put PutFunc) (ScanResult, error) {
	o = o.withDefaults(c.ws)
	ctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()

	type job struct {
		rel string
		f   *os.File // open for reading; the worker closes it
		fi  fs.FileInfo
		at  int64
	}
	jobs := make(chan job, 256)
	var (
		mu  sync.Mutex
		res ScanResult
	)
	// Two workers read and hash; the first error a worker meets stops the
	// walk (cancel), and the workers drain the queue, closing its files.
	var workers errgroup.Group
	for w := 0; w < 2; w++ {
		workers.Go(func() error {
			var first error
			for j := range jobs {
				// A changed file's content at the last scan is the
				// base its new version may be stored as a delta of.
				fctx := cas.WithBase(ctx, cache[j.rel].Blob)
				e, st, err := c.scanFile(fctx, j.rel, j.f, j.fi, j.at, put)
				if err != nil {
					if first == nil {
						first = err
						cancel()
					}
					continue
				}
				mu.Lock()
				res.Manifest.Files = append(res.Manifest.Files, e)
				res.Stats = append(res.Stats, st)
				res.Read++
				mu.Unlock()
			}
			return first
		})
	}
	skip := func(rel, reason string) {
		mu.Lock()
		res.Manifest.Skips = append(res.Manifest.Skips, checkpoints.ScanSkip{Path: rel, Reason: reason})
		mu.Unlock()
	}
	found := 0 // files the walk let through, for o.Progress
	// walk reads the open directory d (workspace-relative dir) and descends
	// into each subdirectory through its own handle (openChild), so no
	// element is followed through a symlink, even one swapped in meanwhile.
	var walk func(d *os.Root, dir string) error
	walk = func(d *os.Root, dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := d.Open(".")
		if err != nil {
			return fmt.Errorf("capture: scan %s: %w", dir, err)
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return fmt.Errorf("capture: scan %s: %w", dir, err)
		}
		if len(ents) > o.MaxDirEntries {
			skip(dir, fmt.Sprintf("directory has %d entries, over the limit of %d", len(ents), o.MaxDirEntries))
			return nil
		}
		for _, e := range ents {
			name := e.Name()
			if isVCSName(name) {
				continue // never read, as a directory or a file (a worktree's .git)
			}
			rel := path.Join(dir, name)
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				continue // never followed, never recorded
			case t.IsDir():
				ign, err := o.Ignore.Match(rel, true)
				if err != nil {
					return err
				}
				if ign {
					continue
				}
				sub, err := openChild(d, name)
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) || errors.Is(err, ErrNotRegular) {
					continue // gone or replaced since the directory was read
				}
				if err != nil {
					return fmt.Errorf("capture: scan %s: %w", rel, err)
				}
				err = walk(sub, rel)
				sub.Close()
				if err != nil {
					return err
				}
			case t.IsRegular():
				if isStagingName(name) {
					continue // a rewind's temp file, in place for a moment
				}
				ign, err := o.Ignore.Match(rel, false)
				if err != nil {
					return err
				}
				if ign {
					continue
				}
				if found++; o.Progress != nil && found%256 == 0 {
					o.Progress(found)
				}
				at := time.Now().UnixNano()
				fi, err := d.Lstat(name)
				if errors.Is(err, fs.ErrNotExist) {
					continue // gone since the directory was read
				}
				if err != nil {
					return fmt.Errorf("capture: scan %s: %w", rel, err)
				}
				if !fi.Mode().IsRegular() {
					continue // replaced since the directory was read
				}
				if fi.Size() > o.MaxFileSize {
					skip(rel, fmt.Sprintf("%d bytes, over the size limit of %d", fi.Size(), o.MaxFileSize))
					continue
				}
				if e, st, ok := cached(rel, fi, cache); ok { // most files of a re-scan: no hand-off
					mu.Lock()
					res.Manifest.Files = append(res.Manifest.Files, e)
					res.Stats = append(res.Stats, st)
					res.Reused++
					mu.Unlock()
					continue
				}
				// Opened here, in the directory's handle, where Lstat
				// just looked; read and hashed by a worker.
				rf, ofi, err := openRegular(d, name, fi)
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrSymlink) {
					continue // gone or replaced since the directory was read
				}
				if err != nil {
					return fmt.Errorf("capture: scan %s: %w", rel, err)
				}
				select {
				case jobs <- job{rel, rf, ofi, at}:
				case <-ctx.Done():
					rf.Close()
					return ctx.Err()
				}
			}
		}
		return nil
	}
	werr := walk(c.ws.dir, "")
	close(jobs)
	if err := workers.Wait(); err != nil {
		werr = err
	}
	if werr != nil {
		if errors.Is(werr, context.DeadlineExceeded) {
			return ScanResult{}, fmt.Errorf("capture: %w (%s)", ErrScanBudget, o.Budget)
		}
		return ScanResult{}, werr
	}
	sort.Slice(res.Manifest.Files, func(i, j int) bool { return res.Manifest.Files[i].Path < res.Manifest.Files[j].Path })
	sort.Slice(res.Manifest.Skips, func(i, j int) bool { return res.Manifest.Skips[i].Path < res.Manifest.Skips[j].Path })
	return res, nil
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
