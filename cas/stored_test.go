package cas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func openTestDisk(t *testing.T) *Disk {
	t.Helper()
	d, err := OpenDisk(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestStoredRoundTrip copies blobs of every kind (raw, zstd, inline, file)
// from one store to another in stored form, and checks the copy reads back
// the same bytes without being re-encoded.
func TestStoredRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := openTestDisk(t), openTestDisk(t)
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 3<<20)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	contents := [][]byte{
		nil,
		[]byte("tiny"),
		[]byte(strings.Repeat("compressible line\n", 5000)),
		noise[:200<<10],
		[]byte(strings.Repeat("a large compressible file\n", 100000)), // 2.6 MB: a file, zstd
		noise, // a file, raw
	}
	for i, c := range contents {
		id, _, err := src.Put(ctx, bytes.NewReader(c))
		if err != nil {
			t.Fatal(err)
		}
		s, r, err := src.OpenStored(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(r)
		r.Close()
		if err != nil || int64(len(raw)) != s.Stored {
			t.Fatalf("blob %d: stored read %d bytes of %d: %v", i, len(raw), s.Stored, err)
		}
		if err := dst.PutStored(ctx, s, bytes.NewReader(raw)); err != nil {
			t.Fatalf("blob %d: %v", i, err)
		}
		got, err := dst.Get(ctx, id)
		if err != nil || !bytes.Equal(got, c) {
			t.Fatalf("blob %d: copy reads %d bytes (%v), want %d", i, len(got), err, len(c))
		}
		s2, r2, err := dst.OpenStored(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		raw2, _ := io.ReadAll(r2)
		r2.Close()
		if s2 != s || !bytes.Equal(raw2, raw) {
			t.Fatalf("blob %d: copy stored as %+v, want as-is %+v", i, s2, s)
		}
	}
}

// TestStoredCorrupt: a truncated, altered or mislabelled body is refused as
// corrupt, and nothing is recorded.
func TestStoredCorrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openTestDisk(t)
	for _, size := range []int{5000, 3 << 20} {
		c := []byte(strings.Repeat(fmt.Sprintf("line of a %d-byte blob\n", size), size/20))
		id, _, err := src.Put(ctx, bytes.NewReader(c))
		if err != nil {
			t.Fatal(err)
		}
		s, r, err := src.OpenStored(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(r)
		r.Close()
		flipped := bytes.Clone(raw)
		flipped[len(flipped)/2] ^= 0x40
		other := s
		other.ID = Sum([]byte("something else"))
		bigger := s
		bigger.Size++
		cases := map[string]struct {
			s    Stored
			body []byte
		}{
			"truncated":  {s, raw[:len(raw)-7]},
			"flipped":    {s, flipped},
			"wrong id":   {other, raw},
			"wrong size": {bigger, raw},
			"trailing":   {Stored{ID: s.ID, Size: s.Size, Enc: s.Enc, Stored: s.Stored + 3}, append(bytes.Clone(raw), 1, 2, 3)},
		}
		for name, c := range cases {
			dst := openTestDisk(t)
			err := dst.PutStored(ctx, c.s, bytes.NewReader(c.body))
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%d bytes, %s: %v, want ErrCorrupt", size, name, err)
			}
			if ok, _ := dst.Has(ctx, c.s.ID); ok {
				t.Errorf("%d bytes, %s: recorded anyway", size, name)
			}
		}
	}
}

// TestStoredInlineAllOrNothing: one bad body among many records none.
func TestStoredInlineAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := openTestDisk(t), openTestDisk(t)
	var ss []Stored
	var bodies [][]byte
	for i := 0; i < 5; i++ {
		id, _, err := src.Put(ctx, strings.NewReader(strings.Repeat(fmt.Sprintf("blob %d\n", i), 50*i+1)))
		if err != nil {
			t.Fatal(err)
		}
		s, r, err := src.OpenStored(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		ss, bodies = append(ss, s), append(bodies, b)
	}
	bad := append([][]byte(nil), bodies...)
	bad[3] = bad[3][:len(bad[3])-1]
	if err := dst.PutStoredInline(ctx, ss, bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a truncated body among five: %v", err)
	}
	for _, s := range ss {
		if ok, _ := dst.Has(ctx, s.ID); ok {
			t.Fatalf("blob %s recorded from a refused batch", s.ID.Short())
		}
	}
	if err := dst.PutStoredInline(ctx, ss, bodies); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if _, err := dst.Get(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
}
