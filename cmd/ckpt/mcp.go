package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/mcpserver"
	"github.com/ckpt/ckpt/internal/quote"
)

func newMCPCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the session as MCP tools over stdio, for agents and IDEs",
		Long: `Serve the session given by the global flags as Model Context Protocol tools
on stdin/stdout, for an agent or IDE to start as an MCP server:

  list_checkpoints  the turns, oldest first, with the files each touched
  show_diff         what rewinding the code to a turn would change
  rewind            code, conversation or both back to a turn (dry_run;
                    conflicts refused unless force)
  undo, redo        reverse the last rewind, or re-apply the last undo
  history           every rewind, undo and redo, with op ids
  status            session, scan mode, open turn and what changed since

With no session named it serves the workspace's most recently active
session, and fails, creating nothing, when the workspace has none in the
store ($CKPT_HOME, --store): the line it writes to stderr at start names
the session, workspace and store. Started by Claude Code with no session named (--session, $CKPT_SESSION),
it serves Claude's own conversation ($CLAUDE_CODE_SESSION_ID, the session
ckpt's Claude hooks record into), in its project directory
($CLAUDE_PROJECT_DIR) until that session exists.

stdout carries only MCP JSON-RPC messages; messages go to stderr. It stops
when the client closes stdin, or on SIGINT or SIGTERM. Claude Code:

  claude mcp add ckpt -- ckpt mcp`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serveMCP(cmd)
		},
	}
}

// serveMCP runs the MCP server on a's streams until the client hangs up
// or the context ends, with one controller for its whole life.
func (a *app) serveMCP(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if err := a.claudeSession(ctx); err != nil {
		return err
	}
	open := a.open
	if a.record {
		open = a.openRecord // Claude's own session, which its hooks record into
	}
	c, err := open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mcpserver.New(c, mcpserver.Options{Version: buildVersion().Version, Logger: log})
	a.say("ckpt: serving session %s of %s (store %s) as MCP tools on stdio", c.Session(), quote.Path(c.WorkspaceRoot()), quote.Path(c.Store().Dir()))
	p := newPending(ctx, a.stdin, a.stdout)
	t := &mcp.IOTransport{Reader: io.NopCloser(p.in), Writer: nopWriteCloser{p.out}}
	err = srv.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil // the client hung up, or we were told to stop
	}
	return err
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

// claudeSession, under Claude Code with no session named, takes Claude's
// session id, which ckpt's Claude hooks use as the ckpt session, and, while
// that session does not exist yet, Claude's project directory as the
// workspace when the current directory is inside it (as the hooks do).
func (a *app) claudeSession(ctx context.Context) error {
	id := os.Getenv("CLAUDE_CODE_SESSION_ID")
	if a.session != "" || id == "" || !controller.ValidSession(id) {
		return nil
	}
	a.session, a.named, a.record = id, true, true
	if a.workspace != "" {
		return nil
	}
	if _, ok, err := controller.OpenStore(a.store).SessionWorkspace(ctx, id); err != nil || ok {
		return err
	}
	proj := os.Getenv("CLAUDE_PROJECT_DIR")
	wd, err := os.Getwd()
	if proj == "" || !filepath.IsAbs(proj) || err != nil {
		return nil
	}
	if rel, err := filepath.Rel(proj, wd); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		a.workspace = proj
	}
	return nil
}
