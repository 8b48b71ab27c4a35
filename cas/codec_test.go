package cas

import (
	"bytes"
	"fmt"
	"testing"
)

// The block encoders lend the one returned last, make at most max, and
// keep a borrower waiting while all are lent.
func TestBlockEncodersLIFOBounded(t *testing.T) {
	t.Parallel()
	b := newBlockEncoders(2, level)
	defer b.close()
	e1, e2 := b.get(), b.get()
	if e1 == e2 {
		t.Fatal("one encoder lent twice at once")
	}
	select {
	case b.slots <- struct{}{}:
		t.Fatal("a third encoder could be lent while two were out (max 2)")
	default:
	}
	got := make(chan bool)
	go func() {
		e := b.get() // waits for the put below
		b.put(e)
		got <- e == e2
	}()
	b.put(e2)
	if same := <-got; !same {
		t.Error("the waiting borrower did not get the encoder just returned")
	}
	b.put(e1)
	if e := b.get(); e != e1 {
		t.Error("get did not lend the encoder returned last")
	} else {
		b.put(e)
	}
	if n := len(b.idle); n != 2 {
		t.Errorf("%d idle encoders, want 2", n)
	}
}

// Content of one block round-trips through encoders borrowed by several
// goroutines at once.
func TestCodecBlockConcurrent(t *testing.T) {
	t.Parallel()
	c, err := newCodec()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			src := bytes.Repeat([]byte{byte('a' + g), 'x', 'y', 'z', '\n'}, 2000)
			for range 20 {
				z, enc := c.encode(src, g%2 == 1) // odd ones at ReadRarely's level
				if enc != encZstd {
					done <- fmt.Errorf("goroutine %d: encoding %d, want zstd", g, enc)
					return
				}
				out, err := c.decode(z, int64(len(src)))
				if err != nil || !bytes.Equal(out, src) {
					done <- fmt.Errorf("goroutine %d: round trip: %v", g, err)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
