package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of a server on a process's stdin and stdout (in
// and out): newline-delimited JSON-RPC, as mcp.IOTransport, except that
// the end of in is passed on to the server only once every request read
// from it has its response written to out, so `printf '…' | ckpt mcp`
// gets every answer though the server stops reading at the end of its
// input. out is never closed.
func Stdio(ctx context.Context, in io.Reader, out io.Writer) mcp.Transport {
	p := newPending(ctx, in, out)
	return &mcp.IOTransport{Reader: io.NopCloser(p.in), Writer: nopWriteCloser{p.out}}
}

// pending counts the requests read from the client and the responses
// written to it, so that the end of the client's input is passed on only
// once every request read has its answer: `printf '…' | ckpt mcp` gets
// them all, though the server stops reading at the end of input.
type pending struct {
	ctx  context.Context
	in   io.Reader
	out  io.Writer
	mu   sync.Mutex
	cond *sync.Cond
	// asked and answered are the ids of requests read and of responses
	// written; inLine and outLine hold a message's start until its end.
	asked, answered map[string]bool
	inLine, outLine []byte
}

// pendingWait bounds the wait at end of input for a server that would not
// answer a request.
const pendingWait = time.Minute

func newPending(ctx context.Context, in io.Reader, out io.Writer) *pending {
	p := &pending{ctx: ctx, asked: map[string]bool{}, answered: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.in = readerFunc(func(b []byte) (int, error) {
		n, err := in.Read(b)
		p.mu.Lock()
		p.inLine = p.scan(p.inLine, b[:n], p.asked, true)
		p.mu.Unlock()
		if err == io.EOF {
			if n > 0 {
				return n, nil // the data first; EOF on the next read
			}
			p.drain()
		}
		return n, err
	})
	p.out = writerFunc(func(b []byte) (int, error) {
		n, err := out.Write(b)
		p.mu.Lock()
		p.outLine = p.scan(p.outLine, b[:n], p.answered, false)
		p.cond.Broadcast()
		p.mu.Unlock()
		return n, err
	})
	return p
}

// scan adds to ids the id of each whole line of buf+b that is a request
// (request set) or a response, and returns what is left of a line.
func (p *pending) scan(buf, b []byte, ids map[string]bool, request bool) []byte {
	buf = append(buf, b...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(buf[:i], &m) == nil && len(m.ID) > 0 && string(m.ID) != "null" && (m.Method != "") == request {
			ids[string(m.ID)] = true
		}
		buf = buf[i+1:]
	}
}

// drain waits until every request read has been answered, the context
// ends or pendingWait passes.
func (p *pending) drain() {
	stop := context.AfterFunc(p.ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	timer := time.AfterFunc(pendingWait, func() {
		p.mu.Lock()
		p.asked = nil
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.ctx.Err() == nil && p.unanswered() {
		p.cond.Wait()
	}
}

func (p *pending) unanswered() bool {
	for id := range p.asked {
		if !p.answered[id] {
			return true
		}
	}
	return false
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// nopWriteCloser keeps the server from closing stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
