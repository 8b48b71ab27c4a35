package retention

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// Usage is what a store directory takes on disk, counted as du counts it:
// the blocks allocated to every file, not their apparent sizes.
type Usage struct {
	// Total is every file under the store: blobs.db and its WAL, object
	// files, every session's index and WAL, config, locks and temp files.
	Total int64
	// Sessions is, per session id, the bytes of its directory.
	Sessions map[string]int64
}

// DiskUsage walks the store directory and counts the blocks of every file.
// A store that does not exist yet takes nothing. The session directories,
// thousands in a store an agent fills, are measured in parallel.
func DiskUsage(store string) (Usage, error) {
	u := Usage{Sessions: map[string]int64{}}
	sessions := filepath.Join(store, "sessions")
	err := filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		if d.IsDir() {
			if p == sessions {
				return fs.SkipDir
			}
			return nil
		}
		n, err := fileBlocks(d)
		u.Total += n
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Usage{}, fmt.Errorf("retention: disk usage of %s: %w", store, err)
	}
	ents, err := os.ReadDir(sessions)
	if errors.Is(err, fs.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return Usage{}, fmt.Errorf("retention: disk usage of %s: %w", store, err)
	}
	sizes := make([]int64, len(ents))
	errs := make([]error, len(ents))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), 8); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sizes[i], errs[i] = treeBlocks(filepath.Join(sessions, ents[i].Name()), ents[i])
			}
		}()
	}
	for i := range ents {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Usage{}, fmt.Errorf("retention: disk usage of %s: %w", store, err)
	}
	for i, e := range ents {
		u.Total += sizes[i]
		if e.IsDir() {
			u.Sessions[e.Name()] += sizes[i]
		}
	}
	return u, nil
}

// fileBlocks is the bytes d's file takes on disk; 0 for one removed
// meanwhile.
func fileBlocks(d fs.DirEntry) (int64, error) {
	fi, err := d.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return allocated(fi), nil
}

// treeBlocks is the bytes the files under p (d's path) take on disk.
func treeBlocks(p string, d fs.DirEntry) (int64, error) {
	if !d.IsDir() {
		return fileBlocks(d)
	}
	var n int64
	err := filepath.WalkDir(p, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		k, err := fileBlocks(d)
		n += k
		return err
	})
	return n, err
}

// allocatedOr returns the bytes fi's file takes on disk when the platform
// says, and its size otherwise.
func allocatedOr(fi os.FileInfo, blocks int64, ok bool) int64 {
	if ok {
		return blocks * 512
	}
	return fi.Size()
}
