package controller

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A turn's first scan (no stat cache yet) runs with the Go heap's soft
// limit lowered to scanMemoryBase plus scanMemoryPerFile for every file it
// has found, where the process's limit is higher. A scan allocates a
// compressed copy of every file it reads while its live heap is about 12
// MiB (zstd's match tables, each worker's read buffer, the rows a batch
// holds between commits) plus ~130 bytes per file (a stat entry and its
// path; the manifest's entries, 64 bytes more, are made at the end), so
// the heap grows to whatever the collector allows: under the CLI's 48 MiB
// soft limit, 48 MiB, about two thirds of the process's peak RSS on Go's
// source tree. The limit trades peak RSS for collections: on Go's src
// (11,400 files), with content in memory encoded by the block encoders
// (cas), 30 MiB ran 30 collections, 26 MiB 63 (the collector's CPU as
// before that change, at 52), 24 MiB ~95 and 22 MiB ~150, each step
// ~1-2 MiB lower; below that the collector runs almost without pause. The
// per-file share keeps a big tree's limit above its live heap (at 100,000
// files a fixed 32 MiB cost 20-35% more CPU, and 26 MiB plus 128 bytes a
// file 50-70% more collections than 30 plus 128), and so does half again
// the live heap the collector last found: 168 bytes a file over 26 MiB
// gives 100,000 small files the 42 MiB they had. Re-scans keep the
// process's limit: they read few files, and hold the stat cache and the
// previous manifest from the start (under this limit one of Go's src
// after 100 edits took 15-100% more CPU).
const (
	scanMemoryBase    = 26 << 20
	scanMemoryPerFile = 168
)

// scanGC counts the scans running in the process, and holds the limit the
// first one found, which the last one puts back.
var scanGC struct {
	sync.Mutex
	n     int
	prior int64 // the limit before the first scan
	set   int64 // the limit the scans set; 0 before the first count
}

// lowerGCForScan returns found, which lowers the heap's soft limit for a
// first scan at its first count of files and raises it as the scan finds
// more, and restore, which puts the prior limit back once no scan runs. A
// limit already lower is kept. The limit is the process's: an embedding
// program that tunes it itself should know that a first scan lowers it for
// its duration.
func lowerGCForScan() (found func(files int), restore func()) {
	scanGC.Lock()
	defer scanGC.Unlock()
	if scanGC.n++; scanGC.n == 1 {
		scanGC.prior = debug.SetMemoryLimit(-1) // a negative limit only reads it
		scanGC.set = 0                          // lowered at the first count
	}
	found = func(files int) {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(live)
		want := scanMemoryBase + int64(files)*scanMemoryPerFile
		if live[0].Value.Kind() == metrics.KindUint64 {
			want = max(want, int64(live[0].Value.Uint64())*3/2)
		}
		scanGC.Lock()
		defer scanGC.Unlock()
		if want = min(scanGC.prior, want); scanGC.set == 0 || want > scanGC.set {
			scanGC.set = want
			debug.SetMemoryLimit(want)
		}
	}
	restore = func() {
		scanGC.Lock()
		defer scanGC.Unlock()
		if scanGC.n--; scanGC.n == 0 {
			debug.SetMemoryLimit(scanGC.prior)
		}
	}
	return found, restore
}

// alsoTell returns a progress function that tells both a and b (either
// may be nil).
func alsoTell(a, b func(files int)) func(files int) {
	return func(files int) {
		if a != nil {
			a(files)
		}
		if b != nil {
			b(files)
		}
	}
}
