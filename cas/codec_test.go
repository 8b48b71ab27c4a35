package cas

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/klauspost/compress/zstd"
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
	c := newCodec()
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

// The shared whole-blob decoder is made on first use: encoding (all a
// capture does) leaves it unmade, a decode makes it once, and a codec
// closed before any decode refuses one instead of making it then.
func TestCodecDecoderOnFirstUse(t *testing.T) {
	t.Parallel()
	c := newCodec()
	plain := bytes.Repeat([]byte("package x // some source\n"), 400)
	z, enc := c.encode(plain, false)
	if enc != encZstd {
		t.Fatalf("encoding %d, want zstd", enc)
	}
	if c.dec != nil {
		t.Fatal("encoding made the decoder")
	}
	got, err := c.decode(z, int64(len(plain)))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("decode: %v (equal %v)", err, bytes.Equal(got, plain))
	}
	d := c.dec
	if d == nil {
		t.Fatal("decode left no decoder")
	}
	if _, err := c.decode(z, int64(len(plain))); err != nil || c.dec != d {
		t.Fatalf("second decode: %v (same decoder %v)", err, c.dec == d)
	}
	c.close()

	unused := newCodec()
	unused.close()
	if _, err := unused.decode(z, int64(len(plain))); !errors.Is(err, ErrClosed) {
		t.Fatalf("decode after close: %v, want ErrClosed", err)
	}
	if unused.dec != nil {
		t.Fatal("decode after close made a decoder")
	}
}

// Content in memory over one block (up to inlineMax, and the byte more
// that worth sees of a longer file) is encoded by the block encoders with
// a window of one block: no streaming encoder, whose 1 MiB window and
// tables cost a scan ~3 MiB per worker, is made for it. It round-trips.
func TestCodecInMemoryOverOneBlock(t *testing.T) {
	t.Parallel()
	c := newCodec()
	defer c.close()
	made := 0
	mk := c.encs.New
	c.encs.New = func() any { made++; return mk() }
	var text bytes.Buffer
	for i := 0; text.Len() <= inlineMax; i++ {
		fmt.Fprintf(&text, "func f%d(x int) int { return x*%d + %d }\n", i, i%97, i%13)
	}
	for _, n := range []int{blockMax + 1, 300 << 10, inlineMax} {
		src := text.Bytes()[:n]
		z, enc := c.encode(src, false)
		if enc != encZstd {
			t.Fatalf("%d bytes: encoding %d, want zstd", n, enc)
		}
		var h zstd.Header
		if err := h.Decode(z); err != nil {
			t.Fatal(err)
		}
		if h.WindowSize > blockMax {
			t.Errorf("%d bytes: frame window %d, want at most one block (%d)", n, h.WindowSize, blockMax)
		}
		out, err := c.decode(z, int64(n))
		if err != nil || !bytes.Equal(out, src) {
			t.Fatalf("%d bytes: round trip: %v", n, err)
		}
	}
	if !c.worth(text.Bytes()[:inlineMax+1]) {
		t.Error("worth: text not worth compressing")
	}
	if made != 0 {
		t.Errorf("%d streaming encoders made for content in memory, want 0", made)
	}
}
