package cas_test

import (
	"context"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
)

// TestCollectWaitsForHolds: a collector cannot start while a writer holds
// the store, and new holds wait while it runs.
func TestCollectWaitsForHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := cas.OpenDisk(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r1, err := d.Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := d.Hold(ctx) // holds are shared
	if err != nil {
		t.Fatal(err)
	}
	collected := make(chan func())
	go func() {
		release, err := d.Collect(ctx)
		if err != nil {
			t.Error(err)
		}
		collected <- release
	}()
	select {
	case <-collected:
		t.Fatal("Collect returned while holds were held")
	case <-time.After(50 * time.Millisecond):
	}
	r1()
	r1() // a second call is a no-op, not a double release
	select {
	case <-collected:
		t.Fatal("Collect returned while one hold was still held")
	case <-time.After(50 * time.Millisecond):
	}
	r2()
	var release func()
	select {
	case release = <-collected:
	case <-time.After(2 * time.Minute): // a safety net: it returns at once
		t.Fatal("Collect never returned after every hold was released")
	}
	held := make(chan func())
	go func() {
		r, err := d.Hold(ctx)
		if err != nil {
			t.Error(err)
		}
		held <- r
	}()
	select {
	case <-held:
		t.Fatal("Hold returned while a collection was running")
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case r := <-held:
		r()
	case <-time.After(2 * time.Minute): // a safety net: it returns at once
		t.Fatal("Hold never returned after the collection ended")
	}
}

func TestDeleteManyAndUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := cas.OpenDisk(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var ids []cas.ID
	for _, s := range []string{"one", "two", string(make([]byte, 3<<20))} { // the last is a file blob
		id, _, err := d.Put(ctx, stringsReader(s))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	n, stored, err := d.Usage(ctx)
	if err != nil || n != 3 || stored <= 0 {
		t.Fatalf("Usage = %d, %d, %v", n, stored, err)
	}
	absent := cas.Sum([]byte("never stored"))
	k, freed, err := d.DeleteMany(ctx, []cas.ID{ids[0], ids[2], absent})
	if err != nil || k != 2 || freed <= 0 {
		t.Fatalf("DeleteMany = %d, %d, %v; want 2 deleted", k, freed, err)
	}
	for i, want := range []bool{false, true, false} {
		if ok, _ := d.Has(ctx, ids[i]); ok != want {
			t.Errorf("Has(blob %d) = %v, want %v", i, ok, want)
		}
	}
	if n, after, _ := d.Usage(ctx); n != 1 || after != stored-freed {
		t.Errorf("Usage after = %d, %d; want 1, %d", n, after, stored-freed)
	}
}
