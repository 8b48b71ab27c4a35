package cas_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// Missing answers, for 1,200 ids of one query, with
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

// A Prefetch reads the rows of blobs stored whole in the index with its
// one query, and verifies their content as Open does; other blobs (files,
// rows over its bound) and absent ones it opens as Disk.Open does.
func TestPrefetch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := openDisk(t, dir)
	put := func(b []byte) cas.ID {
		id, _, err := d.Put(ctx, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	contents := map[string][]byte{
		"raw":     []byte("tiny"),
		"zstd":    bytes.Repeat([]byte("func f() error { return nil }\n"), 300),
		"held":    bytes.Repeat([]byte("held back: read by the prefetch's query\n"), 200),
		"damaged": bytes.Repeat([]byte("damaged before the prefetch\n"), 200),
		"big":     bytes.Repeat([]byte("over the inline bound "), 60<<10), // a file blob
		"wide":    incompressible(200 << 10),                              // inline, over the prefetch bound
	}
	ids := map[string]cas.ID{}
	var all []cas.ID
	for name, b := range contents {
		ids[name] = put(b)
		all = append(all, ids[name])
	}
	absent := cas.Sum([]byte("never stored"))
	db := rawDB(t, dir)
	defer db.Close()
	damage := func(name string) {
		t.Helper()
		if _, err := db.Exec(`UPDATE blobs SET data = ? WHERE id = ?`, []byte("not the blob's frame"), ids[name]); err != nil {
			t.Fatal(err)
		}
	}
	damage("damaged")
	pf, err := d.Prefetch(ctx, append(all, absent))
	if err != nil {
		t.Fatal(err)
	}
	damage("held") // after the prefetch read its row: the prefetch still has the blob
	for name, want := range contents {
		r, err := pf.Open(ctx, ids[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if name == "damaged" {
			if !errors.Is(err, cas.ErrCorrupt) {
				t.Errorf("%s: read %v, want ErrCorrupt", name, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes, %v; want the %d stored", name, len(got), err, len(want))
		}
	}
	if _, err := pf.Open(ctx, absent); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("absent blob: %v, want ErrNotFound", err)
	}
}

// incompressible returns n bytes zstd cannot shrink.
func incompressible(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7919 ^ i>>3*104729)
	}
	return b
}
