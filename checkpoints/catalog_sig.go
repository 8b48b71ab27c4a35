package checkpoints

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// fileSig is what the catalog records of one file of an index.
type fileSig struct {
	exists       bool
	regular      bool // a regular file, not a symbolic link or anything else
	dev, ino     uint64
	size         int64
	ctime, mtime int64 // unix nanoseconds; ctime is mtime where the platform has none
}

// sigs is the signature of a session's index: index.db and its WAL.
type sigs [2]fileSig

// indexSig lstats the index files of session directory dir.
func indexSig(dir string) sigs {
	var s sigs
	for i, name := range []string{FileName, FileName + "-wal"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		s[i] = statSig(fi)
	}
	return s
}

// encode is the signature as stored in the catalog.
func (s sigs) encode() []byte {
	b := make([]byte, 0, 2*41)
	for _, f := range s {
		if !f.exists {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, f.dev)
		b = binary.BigEndian.AppendUint64(b, f.ino)
		b = binary.BigEndian.AppendUint64(b, uint64(f.size))
		b = binary.BigEndian.AppendUint64(b, uint64(f.ctime))
		b = binary.BigEndian.AppendUint64(b, uint64(f.mtime))
	}
	return b
}

// trusted reports whether a summary recorded with signature rec, read
// after time at (unix ns), still holds for an index whose files now have
// signature s (see the catalog's rules in catalog.go).
func (s sigs) trusted(rec []byte, at int64) bool {
	if string(s.encode()) != string(rec) {
		return false
	}
	db, wal := s[0], s[1]
	if !db.exists || db.size == 0 || (wal.exists && wal.size > 0) {
		return false
	}
	// A symbolic link's own times do not change when its target is
	// written (nor does SQLite keep the WAL beside the link): only regular
	// files are vouched for.
	if !db.regular || (wal.exists && !wal.regular) {
		return false
	}
	limit := at - int64(catalogMargin)
	for _, f := range s {
		if f.exists && (f.ctime >= limit || f.mtime >= limit) {
			return false
		}
	}
	return true
}

// modTime is a file's modification time in unix nanoseconds.
func modTime(fi os.FileInfo) int64 { return fi.ModTime().UnixNano() }

// indexSigsEach is indexSigs by path, for platforms without fstatat.
func indexSigsEach(sessions string, ids []string) []sigs {
	out := make([]sigs, len(ids))
	parallel(len(ids), func(i int) { out[i] = indexSig(filepath.Join(sessions, ids[i])) })
	return out
}

// parallel calls fn(0..n-1) from one goroutine per processor: lstat-bound
// work over thousands of sessions, which the kernel serves in parallel.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 8, max(n/256, 1))
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
