package cas_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// Missing answers, for more ids than one of its queries asks about, with
// duplicates and a blob stored in a file, what Has answers for each.
func TestMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openDisk(t, t.TempDir())
	b := d.NewBatch()
	var ids, want []cas.ID
	for i := range 1200 {
		content := []byte(fmt.Sprintf("blob %d", i))
		if i == 7 {
			content = bytes.Repeat([]byte("big "), 300<<10) // over 1 MiB: a file blob
		}
		if i%3 == 0 {
			id := cas.Sum(content)
			ids = append(ids, id)
			want = append(want, id)
			continue
		}
		id, _, err := b.Put(ctx, bytes.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, ids[:10]...) // asked twice: answered once
	got, err := d.Missing(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Missing: %d ids, want %d (first %v, want %v)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
	for _, id := range ids {
		has, err := d.Has(ctx, id)
		if err != nil || has == slices.Contains(want, id) {
			t.Fatalf("Has(%s) = %v, %v; Missing disagrees", id.Short(), has, err)
		}
	}
	if got, err := d.Missing(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("Missing(nil) = %v, %v", got, err)
	}
}
