package capture

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

func TestScanProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 600 {
		f.write(t, fmt.Sprintf("d%d/f%03d.txt", i%7, i), fmt.Sprint(i), 0o644)
	}
	f.write(t, "node_modules/x.js", "ignored", 0o644)
	var got []int
	o := ScanOptions{Progress: func(files int) { got = append(got, files) }}
	res, err := f.c.Scan(context.Background(), o, nil, Hash)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifest.Files) != 600 {
		t.Fatalf("scanned %d files, want 600", len(res.Manifest.Files))
	}
	if want := []int{256, 512}; !slices.Equal(got, want) {
		t.Errorf("progress calls %v, want %v", got, want)
	}
}
