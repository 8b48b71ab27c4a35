package controller

import (
	"runtime/debug"
	"sync"
)

// A turn that scans runs with the Go heap's soft limit lowered to
// scanMemoryBase plus scanMemoryPerFile for every file the scan has found,
// where the process's limit is higher. A scan allocates a compressed copy
// of every file it reads while its live heap is about 17 MiB (zstd's match
// tables, the rows a batch holds between commits) plus ~230 bytes per file
// (the manifest and the stat entries), so the heap grows to whatever the
// collector allows: under the CLI's 48 MiB soft limit, 48 MiB, about two
// thirds of the process's peak RSS on Go's source tree. With a limit of 32
// MiB that scan (11,400 files) peaked ~16 MiB lower for ~7% more CPU; 24
// MiB saved 4 MiB more for ~50% more CPU, since the collector then runs
// almost without pause. The per-file share keeps a big tree's limit above
// its live heap (at 100,000 files a fixed 32 MiB cost 20-35% more CPU).
const (
	scanMemoryBase    = 28 << 20
	scanMemoryPerFile = 384
)

// scanGC counts the scans running in the process, and holds the limit the
// first one found, which the last one puts back.
var scanGC struct {
	sync.Mutex
	n     int
	prior int64 // the limit before the first scan
	set   int64 // the limit the scans set
}

// lowerGCForScan lowers the heap's soft limit for a scan; found raises it
// as the scan finds files, and restore puts the prior limit back once no
// scan runs. A limit already lower is kept. The limit is the process's: an
// embedding program that tunes it itself should know that a scanning turn
// lowers it for its duration.
func lowerGCForScan() (found func(files int), restore func()) {
	scanGC.Lock()
	defer scanGC.Unlock()
	if scanGC.n++; scanGC.n == 1 {
		scanGC.prior = debug.SetMemoryLimit(-1) // a negative limit only reads it
		scanGC.set = min(scanGC.prior, scanMemoryBase)
		debug.SetMemoryLimit(scanGC.set)
	}
	found = func(files int) {
		scanGC.Lock()
		defer scanGC.Unlock()
		if want := min(scanGC.prior, scanMemoryBase+int64(files)*scanMemoryPerFile); want > scanGC.set {
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
