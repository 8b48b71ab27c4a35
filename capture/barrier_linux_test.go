//go:build linux

package capture

import "testing"

func TestKernelAtLeast(t *testing.T) {
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
