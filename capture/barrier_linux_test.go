//go:build linux

package capture

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestKernelAtLeast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"5.8.0", true},
		{"5.8", true},
		{"5.7.19-arch1", false},
		{"5.10.0-21-amd64", true},
		{"6.1.0", true},
		{"4.19.0", false},
		{"5.8-rc1", true},
		{"5.15rc2", true},
		{"3.10.0-1160.el7.x86_64", false},
		{"", false},
		{"x.y", false},
		{"6", false},
	} {
		if got := kernelAtLeast(c.release, 5, 8); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", c.release, got, c.want)
		}
	}
}

// fewDirty reads this system's /proc/meminfo: it must find both counts
// there, so it answers the same as a direct reading of them.
func TestFewDirtyReadsMeminfo(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip(err)
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(line, "Dirty: %d kB", &kb); n == 1 {
			total += kb << 10
		}
		if n, _ := fmt.Sscanf(line, "Writeback: %d kB", &kb); n == 1 {
			total += kb << 10
		}
	}
	// The counts move between the two readings; only a clear answer is
	// compared.
	if total < maxOthersDirty/2 || total > 2*maxOthersDirty {
		if got, want := fewDirty(), total <= maxOthersDirty; got != want {
			t.Fatalf("fewDirty() = %v with %d bytes dirty or under write-back, want %v", got, total, want)
		}
	}
}
