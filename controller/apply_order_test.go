package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// byDirTurns takes one file from each directory in turn, keeping each
// directory's files in their order, and returns every index once.
func TestByDirTurns(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  []int
	}{
		{nil, []int{}},
		{[]string{"a"}, []int{0}},
		{[]string{"a", "b", "c"}, []int{0, 1, 2}},
		{[]string{"d0/a", "d0/b", "d0/c", "d1/a", "d1/b", "e"}, []int{0, 3, 5, 1, 4, 2}},
		{[]string{"x/a", "y/a", "x/b", "x/c"}, []int{0, 1, 2, 3}},
		{[]string{"p/q/a", "p/a", "p/q/b"}, []int{0, 1, 2}},
	} {
		files := make([]checkpoints.OpFile, len(c.paths))
		for i, p := range c.paths {
			files[i].Path = p
		}
		got := byDirTurns(files)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("byDirTurns(%q) = %v, want %v", c.paths, got, c.want)
		}
		sorted := slices.Sorted(slices.Values(got))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("byDirTurns(%q) = %v: not every index once", c.paths, got)
			}
		}
	}
}
