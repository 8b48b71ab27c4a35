package cas

import (
	"context"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Blob encodings, the blobs.enc column (encDelta, 2, is in delta.go).
const (
	encRaw  = 0
	encZstd = 1
)

const (
	// minCompress is the size below which content is stored raw: zstd's
	// frame overhead eats any gain.
	minCompress = 64
	// level is the zstd level; see doc.go for the measurements behind it.
	level = zstd.SpeedDefault
	// maxWindow bounds the memory a decoder may allocate for one frame.
	// Our encoders never use more than 8 MiB (blobs written before the
	// windows were made smaller used 8 MiB).
	maxWindow = 64 << 20
	// blockMax is zstd's largest block: content up to it is one block,
	// encoded without history.
	blockMax = 128 << 10
	// streamWindow is the window of the streaming encoders, for file
	// blobs (over inlineMax) under bigBlob. Its history buffer is the window
	// plus a block, per encoder in use (one per worker of a scan): 1 MiB stores
	// 0.1% more bytes than 4 MiB for the 1-8 MiB files of Go's source
	// tree, and saves 3 MiB per encoder.
	streamWindow = 1 << 20
	// bigBlob is the size from which a file is compressed by the big
	// encoder: SpeedFastest on every CPU, in jobs of 2 MiB (four times its
	// 512 KiB window), whatever the file's size. On 128 MiB of Go source
	// it is ~1.5x SpeedDefault's speed per CPU, the jobs run in parallel
	// with each other and with hashing, and it stores ~12% more bytes;
	// the capture process peaks at 46 MiB RSS (37 MiB with one
	// SpeedDefault stream; 64 MiB with a 1 MiB window, for 1% fewer bytes).
	bigBlob   = 8 << 20
	bigWindow = 512 << 10
)

// codec compresses and decompresses blobs. Content in memory (up to
// inlineMax), encoded by EncodeAll, borrows an encoder from blocks; the
// shared dec serves whole-buffer DecodeAll, which is safe for concurrent
// use. dec is made on first use (sharedDecoder): a capture process never
// decodes a whole blob, and a decoder's buffers are page faults a
// short-lived process need not take. A file blob is streamed through a zstd
// Encoder, which serves one stream at a time and carries window-sized
// buffers that are costly to allocate per blob, so streams borrow one from
// a sync.Pool, which also lets the GC drop idle ones.
type codec struct {
	blocks blockEncoders
	// fastBlocks serve content read rarely (ReadRarely): SpeedFastest.
	fastBlocks blockEncoders
	decOnce    sync.Once
	dec        *zstd.Decoder
	encs       sync.Pool
	bigEncs    sync.Pool
	decs       sync.Pool
	// deltaEncs and deltaDecs serve delta frames (delta.go): each call
	// sets its own dictionary, so they cannot be shared.
	deltaEncs sync.Pool
	deltaDecs sync.Pool
}

func newCodec() *codec {
	c := &codec{blocks: newBlockEncoders(runtime.GOMAXPROCS(0), level),
		fastBlocks: newBlockEncoders(runtime.GOMAXPROCS(0), zstd.SpeedFastest)}
	// Concurrency 1: synchronous, no goroutines to leak from pooled objects.
	c.encs.New = func() any {
		// A 1 MiB window with the low-memory option: about 2.5 MiB per
		// encoder instead of ~17 MiB for the level's default 8 MiB, which
		// a scan allocated again after each GC emptied the pool.
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(streamWindow), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // the options are constant
		}
		return e
	}
	c.bigEncs.New = func() any {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithWindowSize(bigWindow), zstd.WithConcurrentBlocks(true))
		if err != nil {
			panic(err) // the options are constant
		}
		return e
	}
	c.decs.New = func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderMaxMemory(maxWindow))
		if err != nil {
			panic(err) // the options are constant
		}
		return d
	}
	c.deltaEncs.New = func() any {
		// SpeedFastest: every delta sets a new dictionary, and the encoder
		// rebuilds its hash tables for it; SpeedDefault's are 4x larger.
		// On 10 KiB of Go source with a line inserted it is ~10x faster
		// per delta, and on BenchmarkHistory its deltas are 3% larger.
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(inlineMax), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // the options are constant
		}
		return e
	}
	c.deltaDecs.New = func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxWindow),
			zstd.WithDecoderMaxMemory(maxWindow), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(err) // the options are constant
		}
		return d
	}
	return c
}

func (c *codec) close() {
	c.blocks.close()
	c.fastBlocks.close()
	c.decOnce.Do(func() {}) // none is made after this
	if c.dec != nil {
		c.dec.Close()
	}
}

// sharedDecoder returns dec, making it on first use; nil once the codec
// is closed without having made one.
func (c *codec) sharedDecoder() *zstd.Decoder {
	c.decOnce.Do(func() {
		// WithDecodeAllCapLimit makes DecodeAll stop at cap(dst), which
		// decode sets from the recorded size: a bomb fails after one block.
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(maxWindow),
			zstd.WithDecoderMaxMemory(maxWindow), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(err) // the options are constant
		}
		c.dec = d
	})
	return c.dec
}

// blockEncoders lends encoders for content in memory. Content of at most
// one block zstd encodes without history: an encoder's window costs
// nothing, and its state is only its match tables (1.3 MiB); longer
// content adds a history of two blocks (256 KiB) the first time. At most max are made, and a
// borrower waits while all are lent, as EncodeAll of one shared encoder
// of that concurrency would. The last one returned is the next one lent,
// so captures of one file after another find the tables used last still
// in the CPU's caches. One shared encoder takes turns between its per-CPU
// states, touching twice the memory: in-process captures of 8 KiB files
// spent about twice as long compressing with it on the 2-core test
// machine. The output is the same (level and window are).
type blockEncoders struct {
	level zstd.EncoderLevel
	slots chan struct{} // one per encoder lent
	mu    sync.Mutex
	idle  []*zstd.Encoder
}

func newBlockEncoders(max int, level zstd.EncoderLevel) blockEncoders {
	return blockEncoders{level: level, slots: make(chan struct{}, max)}
}

func (b *blockEncoders) get() *zstd.Encoder {
	b.slots <- struct{}{}
	b.mu.Lock()
	if n := len(b.idle); n > 0 {
		e := b.idle[n-1]
		b.idle = b.idle[:n-1]
		b.mu.Unlock()
		return e
	}
	b.mu.Unlock()
	// Concurrency 1: EncodeAll runs on the calling goroutine.
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(b.level), zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(blockMax), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err) // the options are constant
	}
	return e
}

func (b *blockEncoders) put(e *zstd.Encoder) {
	b.mu.Lock()
	b.idle = append(b.idle, e)
	b.mu.Unlock()
	<-b.slots
}

func (b *blockEncoders) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.idle {
		e.Close()
	}
	b.idle = nil
}

// encode returns the bytes to store for b and their encoding: zstd when it
// saves at least ~3% (1/32), raw otherwise. fast compresses content of one
// block at SpeedFastest (ReadRarely).
func (c *codec) encode(b []byte, fast bool) ([]byte, int) {
	scratch := scratches.Get().(*[]byte)
	defer scratches.Put(scratch)
	z, ok := c.compress(b, scratch, fast)
	if !ok {
		return b, encRaw
	}
	// Keep only the compressed bytes: a batch holds them until it commits.
	return append(make([]byte, 0, len(z)), z...), encZstd
}

// worth reports whether encode would compress b.
func (c *codec) worth(b []byte) bool {
	scratch := scratches.Get().(*[]byte)
	defer scratches.Put(scratch)
	_, ok := c.compress(b, scratch, false)
	return ok
}

// compress compresses b into *scratch (growing it) and reports whether
// that saves enough to store it so; fast as for encode.
func (c *codec) compress(b []byte, scratch *[]byte, fast bool) ([]byte, bool) {
	if len(b) < minCompress {
		return nil, false
	}
	// Content in memory is at most inlineMax (plus the byte worth reads
	// to see a file is longer): over a block, the block encoders encode
	// it with a window of one block. A streaming encoder's window of
	// streamWindow stores 0.5% fewer bytes for Go's source files of 128
	// KiB to 1 MiB, but costs ~3 MiB per worker of a scan (its match
	// tables and history) beside the block encoder the worker has too;
	// the block encoder adds only a history of two blocks.
	blocks := &c.blocks
	if fast && len(b) <= blockMax {
		blocks = &c.fastBlocks
	}
	e := blocks.get()
	z := e.EncodeAll(b, (*scratch)[:0])
	blocks.put(e)
	*scratch = z
	return z, len(z) <= len(b)-len(b)/32
}

type rarelyKey struct{}

// ReadRarely returns a context carrying a hint for Put and Batch.Put: the
// content put next will seldom be read, like the copy of a file a rewind
// replaces, kept so that the rewind can be undone. A Disk then compresses
// content of up to 128 KiB (one zstd block) at zstd's fastest level: on a
// rewind of 1,000 files of 8 KiB of Go source the copies took 9% fewer
// of the rewind's user-space instructions, for 6% more bytes (stored raw
// they took 40% fewer, but 2.7 times the bytes, and twice the page writes
// of SQLite). Like WithBase, the hint changes how bytes are stored, never
// a result: the ID, the size and every read are the same with or without
// it. Memory ignores it.
func ReadRarely(ctx context.Context) context.Context {
	return context.WithValue(ctx, rarelyKey{}, true)
}

// rarelyRead reports whether ctx carries ReadRarely's hint.
func rarelyRead(ctx context.Context) bool {
	v, _ := ctx.Value(rarelyKey{}).(bool)
	return v
}

// scratches holds the buffers encode compresses into.
var scratches = sync.Pool{New: func() any { return new([]byte) }}

// decode decompresses a whole zstd blob recorded as size bytes. It decodes
// at most size+1 bytes, so a longer blob is caught by the verifier.
func (c *codec) decode(z []byte, size int64) ([]byte, error) {
	dec := c.sharedDecoder()
	if dec == nil {
		return nil, ErrClosed
	}
	return dec.DecodeAll(z, make([]byte, 0, size+1))
}

// encoder returns a pooled streaming encoder writing to w: the big one for
// content known to be at least bigBlob bytes.
func (c *codec) encoder(w io.Writer, big bool) *zstd.Encoder {
	pool := &c.encs
	if big {
		pool = &c.bigEncs
	}
	e := pool.Get().(*zstd.Encoder)
	e.Reset(w)
	return e
}

func (c *codec) putEncoder(e *zstd.Encoder, big bool) {
	e.Reset(nil)
	if big {
		c.bigEncs.Put(e)
	} else {
		c.encs.Put(e)
	}
}

// decoder returns a pooled streaming decoder reading r.
func (c *codec) decoder(r io.Reader) (*zstd.Decoder, error) {
	d := c.decs.Get().(*zstd.Decoder)
	if err := d.Reset(r); err != nil {
		c.putDecoder(d)
		return nil, err
	}
	return d, nil
}

func (c *codec) putDecoder(d *zstd.Decoder) {
	d.Reset(nil)
	c.decs.Put(d)
}
