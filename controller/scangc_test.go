package controller

import (
	"runtime/debug"
	"testing"
)

func TestLowerGCForScan(t *testing.T) {
	prior := debug.SetMemoryLimit(64 << 20)
	defer debug.SetMemoryLimit(prior)
	limit := func() int64 { return debug.SetMemoryLimit(-1) }

	found, restore := lowerGCForScan()
	if got := limit(); got != 64<<20 {
		t.Fatalf("limit before the first count = %d, want %d", got, 64<<20)
	}
	found(0)
	if got := limit(); got != scanMemoryBase {
		t.Fatalf("limit at the first count = %d, want %d", got, scanMemoryBase)
	}
	found(1000)
	if got, want := limit(), int64(scanMemoryBase+1000*scanMemoryPerFile); got != want {
		t.Errorf("limit after 1,000 files = %d, want %d", got, want)
	}
	found(10) // another scan's smaller count does not lower it
	if got, want := limit(), int64(scanMemoryBase+1000*scanMemoryPerFile); got != want {
		t.Errorf("limit after a smaller count = %d, want %d", got, want)
	}
	found2, restore2 := lowerGCForScan() // a second scan at once
	found2(1 << 30)
	if got := limit(); got != 64<<20 {
		t.Errorf("limit after a huge count = %d, want the prior %d", got, 64<<20)
	}
	restore()
	if got := limit(); got != 64<<20 {
		t.Errorf("limit while the second scan runs = %d, want %d", got, 64<<20)
	}
	restore2()
	if got := limit(); got != 64<<20 {
		t.Errorf("limit after both scans = %d, want the prior %d", got, 64<<20)
	}

	debug.SetMemoryLimit(16 << 20) // lower than a scan's: kept
	found, restore = lowerGCForScan()
	found(1000)
	if got := limit(); got != 16<<20 {
		t.Errorf("limit during a scan under a lower one = %d, want %d", got, 16<<20)
	}
	restore()
	if got := limit(); got != 16<<20 {
		t.Errorf("limit after = %d, want %d", got, 16<<20)
	}
}
