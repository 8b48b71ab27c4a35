package acpproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ckpt/ckpt/controller"
)

// Options configure a Proxy.
type Options struct {
	// Store is the ckpt store the sessions live in: every session the
	// proxy opens shares its blob store.
	Store *controller.Store
	// Open opens the ckpt session id of workspace; nil opens it with
	// Store.Open.
	Open func(ctx context.Context, workspace, session string) (*controller.Controller, error)
	// Logger receives warnings (a write ckpt could not capture, a session
	// it does not know); nil discards them. It must not write to the
	// client's stream.
	Logger *slog.Logger
	// NoScan opens turns without a workspace manifest: only the writes the
	// agent asks the client to make are captured.
	NoScan bool
}

// Proxy forwards one editor's connection to one agent.
type Proxy struct {
	o        Options
	log      *slog.Logger
	toClient lineWriter
	toAgent  lineWriter

	mu       sync.Mutex
	sessions map[string]*session // by ACP session id
	pending  map[string]pending  // the client's requests, by id
}

// session is one ACP session and the ckpt session it records into.
type session struct {
	c *controller.Controller
	// tool is the tool call the agent announced last in the open turn.
	tool toolCall
	// advertised: the agent sent its commands, and the client has ours.
	advertised bool
	// reply collects the agent's message text of the prompt in flight.
	reply strings.Builder
}

type toolCall struct{ id, name string }

// pending is a client request the proxy waits for the answer to.
type pending struct {
	method  string
	cwd     string
	session string
}

// lineWriter writes whole lines to one side, one at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) write(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(b)
	return err
}

// New returns a proxy with o.
func New(o Options) *Proxy {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Open == nil {
		store := o.Store
		o.Open = func(ctx context.Context, ws, id string) (*controller.Controller, error) {
			return store.Open(ctx, controller.Options{Workspace: ws, Session: id})
		}
	}
	return &Proxy{o: o, log: log, sessions: map[string]*session{}, pending: map[string]pending{}}
}

// SessionID is the ckpt session an ACP session records into: its own id
// when ckpt can name a session so, else "acp-" and a hash of it.
func SessionID(acp string) string {
	if controller.ValidSession(acp) {
		return acp
	}
	h := sha256.Sum256([]byte(acp))
	return "acp-" + hex.EncodeToString(h[:16])
}

// Serve forwards client (the editor's messages) to toAgent and agent (the
// agent's) to toClient until the agent's stream ends; when the client's
// ends it closes toAgent, which tells the agent to finish. It closes every
// controller it opened before returning.
func (p *Proxy) Serve(ctx context.Context, client io.Reader, toClient io.Writer, agent io.Reader, toAgent io.WriteCloser) error {
	p.toClient.w, p.toAgent.w = toClient, toAgent
	defer p.close()
	go func() {
		err := eachLine(client, func(line []byte) error { return p.fromClient(ctx, line) })
		if err != nil {
			p.log.Warn("reading the client", "err", err)
		}
		toAgent.Close()
	}()
	return eachLine(agent, func(line []byte) error { return p.fromAgent(ctx, line) })
}

// Run starts agent, an ACP agent's command whose Stdin and Stdout are
// unset (they become the proxy's pipes to it), serves client and toClient
// to it until its output ends (Serve), and waits for it to exit. An agent
// that exits with an error is an error naming it, unless ctx has ended
// (the agent was told to stop).
func (p *Proxy) Run(ctx context.Context, agent *exec.Cmd, client io.Reader, toClient io.Writer) error {
	in, err := agent.StdinPipe()
	if err != nil {
		return err
	}
	out, err := agent.StdoutPipe()
	if err != nil {
		return err
	}
	if err := agent.Start(); err != nil {
		return fmt.Errorf("start the agent %s: %w", agent.Args[0], err)
	}
	serr := p.Serve(ctx, client, toClient, out, in)
	werr := agent.Wait()
	if serr != nil {
		return serr
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ctx.Err() == nil {
		return fmt.Errorf("the agent %s exited: %w", agent.Args[0], werr)
	}
	if ctx.Err() != nil {
		return nil
	}
	return werr
}

func (p *Proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sessions {
		s.c.Close()
	}
	p.sessions = map[string]*session{}
}

// eachLine calls fn with every line of r, its newline included.
func eachLine(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// message is the envelope of a JSON-RPC message: a request (method and
// id), a notification (method, no id) or a response (id, no method).
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// decode reads line as one JSON-RPC message; false for anything else (a
// batch, a line that is not JSON), which is forwarded as it is.
func decode(line []byte) (message, bool) {
	var m message
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return message{}, false
	}
	return m, true
}

func (m message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }

// idKey is a message id as a map key.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// fromClient handles one line from the editor.
func (p *Proxy) fromClient(ctx context.Context, line []byte) error {
	m, ok := decode(line)
	if !ok || !m.isRequest() {
		return p.toAgent.write(line)
	}
	switch m.Method {
	case "session/new", "session/fork":
		var pr struct {
			SessionID string `json:"sessionId"` // of session/fork: the session forked
			Cwd       string `json:"cwd"`
		}
		if json.Unmarshal(m.Params, &pr) == nil && pr.Cwd != "" {
			p.setPending(m.ID, pending{method: m.Method, cwd: pr.Cwd, session: pr.SessionID})
		}
	case "session/load", "session/resume":
		var pr struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
		}
		if json.Unmarshal(m.Params, &pr) == nil && pr.SessionID != "" && pr.Cwd != "" {
			p.attach(ctx, pr.SessionID, pr.Cwd)
			p.setPending(m.ID, pending{method: m.Method, session: pr.SessionID})
		}
	case "session/prompt":
		var pr struct {
			SessionID string            `json:"sessionId"`
			Prompt    []json.RawMessage `json:"prompt"`
		}
		if json.Unmarshal(m.Params, &pr) != nil {
			break
		}
		text := promptText(pr.Prompt)
		if name, args, ok := ownCommand(text); ok {
			return p.answer(ctx, m.ID, pr.SessionID, name, args)
		}
		p.beginTurn(ctx, pr.SessionID, text)
		p.setPending(m.ID, pending{method: m.Method, session: pr.SessionID})
	}
	return p.toAgent.write(line)
}

func (p *Proxy) setPending(id json.RawMessage, pd pending) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[idKey(id)] = pd
}

func (p *Proxy) session(id string) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[id]
}

// attach opens the ckpt session of ACP session id, its workspace the one
// cwd is in (workspace).
func (p *Proxy) attach(ctx context.Context, id, cwd string) *session {
	if s := p.session(id); s != nil {
		return s
	}
	c, err := p.o.Open(ctx, p.workspace(ctx, cwd, id), SessionID(id))
	if err != nil {
		p.log.Warn("not recording this ACP session", "session", id, "cwd", cwd, "err", err)
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sessions[id]; s != nil {
		c.Close()
		return s
	}
	s := &session{c: c}
	p.sessions[id] = s
	return s
}

// workspace is the workspace of ACP session id started in cwd: the
// session's own when it exists and cwd is inside it, else the nearest
// directory enclosing cwd that the store knows as a workspace (an agent
// an editor starts in a subdirectory records into the project's session),
// else cwd (Store.Resolve).
func (p *Proxy) workspace(ctx context.Context, cwd, id string) string {
	if p.o.Store == nil {
		return cwd
	}
	loc, err := p.o.Store.Resolve(ctx, controller.ResolveOptions{Dir: cwd, Session: SessionID(id), Create: true})
	if err != nil {
		return cwd // Open says what is wrong
	}
	return loc.Workspace
}

// fork makes the ckpt session of ACP session id, which the agent forked
// from session from, a ckpt fork of from's after its last turn: it holds
// from's turns, rewinds them on its own, and names from and that turn as
// its parent (`ckpt sessions --tree` shows it under from). A source ckpt does
// not record, or one in another workspace than cwd, leaves id to be
// recorded as a new session, and says so.
func (p *Proxy) fork(ctx context.Context, from, id, cwd string) {
	src := p.session(from)
	if src == nil && p.o.Store != nil {
		if loc, err := p.o.Store.Resolve(ctx, controller.ResolveOptions{Session: SessionID(from), Create: true}); err == nil && loc.OfSession {
			src = p.attach(ctx, from, loc.Workspace)
		}
	}
	if src == nil {
		p.log.Warn("a fork of an ACP session ckpt does not record: recording it as a new session", "session", id, "from", from)
		return
	}
	if root, err := filepath.EvalSymlinks(p.workspace(ctx, cwd, id)); err != nil || root != src.c.WorkspaceRoot() {
		p.log.Warn("a fork in another workspace than its session's: recording it as a new session", "session", id, "from", from, "cwd", cwd)
		return
	}
	next := 0
	if last, err := src.c.Turn(ctx, -1); err == nil {
		next = last.Turn + 1
	} else if !errors.Is(err, controller.ErrNoOpenTurn) {
		p.log.Warn("could not fork the ckpt session: recording the fork as a new session", "session", id, "from", from, "err", err)
		return
	}
	if _, err := src.c.Fork(ctx, next, controller.ForkOptions{To: SessionID(id)}); err != nil {
		p.log.Warn("could not fork the ckpt session: recording the fork as a new session", "session", id, "from", from, "err", err)
	}
}

// promptText is the text of a prompt's text blocks.
func promptText(blocks []json.RawMessage) string {
	var parts []string
	for _, b := range blocks {
		var cb struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &cb) == nil && cb.Type == "text" && cb.Text != "" {
			parts = append(parts, cb.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// beginTurn opens the turn of a prompt in session id's ckpt session.
func (p *Proxy) beginTurn(ctx context.Context, id, text string) {
	s := p.session(id)
	if s == nil {
		p.log.Warn("a prompt in an ACP session ckpt does not record", "session", id)
		return
	}
	if text == "" {
		text = "(a prompt without text)"
	}
	res, err := s.c.BeginTurn(ctx, text, controller.TurnOptions{Scan: !p.o.NoScan})
	if err != nil {
		p.log.Warn("could not open a turn", "session", id, "err", err)
		return
	}
	if res.Warning != "" {
		p.log.Warn(res.Warning, "session", id)
	}
	p.mu.Lock()
	s.tool = toolCall{}
	s.reply.Reset()
	p.mu.Unlock()
}

// fromAgent handles one line from the agent.
func (p *Proxy) fromAgent(ctx context.Context, line []byte) error {
	m, ok := decode(line)
	if !ok {
		return p.toClient.write(line)
	}
	switch {
	case m.Method == "" && len(m.ID) > 0:
		return p.response(ctx, m, line)
	case m.Method == "session/update":
		out, err := p.update(m, line)
		if err != nil {
			return err
		}
		line = out
	case m.Method == "session/request_permission":
		var pr struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				ToolCallID string `json:"toolCallId"`
				Title      string `json:"title"`
				Kind       string `json:"kind"`
			} `json:"toolCall"`
		}
		if json.Unmarshal(m.Params, &pr) == nil {
			p.announce(pr.SessionID, pr.ToolCall.ToolCallID, pr.ToolCall.Title, pr.ToolCall.Kind)
		}
	case m.Method == "fs/write_text_file" && m.isRequest():
		var pr struct {
			SessionID string `json:"sessionId"`
			Path      string `json:"path"`
		}
		if json.Unmarshal(m.Params, &pr) == nil {
			if err := p.captureWrite(ctx, pr.SessionID, pr.Path); err != nil {
				return p.refuse(m.ID, err)
			}
		}
	case m.Method == "terminal/create" && m.isRequest():
		var pr struct {
			SessionID string `json:"sessionId"`
			Command   string `json:"command"`
		}
		if json.Unmarshal(m.Params, &pr) == nil {
			p.terminal(ctx, pr.SessionID, pr.Command)
		}
	}
	return p.toClient.write(line)
}

// response forwards the agent's answer to a client request, and acts on
// the ones the proxy waits for.
func (p *Proxy) response(ctx context.Context, m message, line []byte) error {
	p.mu.Lock()
	pd, ok := p.pending[idKey(m.ID)]
	delete(p.pending, idKey(m.ID))
	p.mu.Unlock()
	if !ok || len(m.Error) > 0 {
		return p.toClient.write(line)
	}
	var s *session
	id := pd.session
	switch pd.method {
	case "session/new", "session/fork":
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Result, &r) == nil && r.SessionID != "" {
			if pd.method == "session/fork" {
				p.fork(ctx, pd.session, r.SessionID, pd.cwd)
			}
			id = r.SessionID
			s = p.attach(ctx, id, pd.cwd)
		}
	case "session/load", "session/resume":
		s = p.session(id)
	case "session/prompt":
		p.endTurn(ctx, id)
	}
	if err := p.toClient.write(line); err != nil || s == nil {
		return err
	}
	// The client learns of ckpt's commands with the session, also from
	// an agent that advertises none; the agent's own are added to them
	// when it sends them.
	p.mu.Lock()
	done := s.advertised
	s.advertised = true
	p.mu.Unlock()
	if done {
		return nil
	}
	upd, err := json.Marshal(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": ownCommands()})
	if err != nil {
		return err
	}
	return p.notify(id, upd)
}

// endTurn records the agent's answer to the prompt that ended.
func (p *Proxy) endTurn(ctx context.Context, id string) {
	s := p.session(id)
	if s == nil {
		return
	}
	p.mu.Lock()
	text := s.reply.String()
	s.reply.Reset()
	p.mu.Unlock()
	if text == "" {
		return
	}
	if _, err := s.c.AppendMessage(ctx, "assistant", text); err != nil && !errors.Is(err, controller.ErrNoOpenTurn) {
		p.log.Warn("could not record the agent's answer", "session", id, "err", err)
	}
}

// update handles a session/update notification: it notes tool calls and
// answer text, and adds ckpt's commands to the agent's. It returns the
// line to forward.
func (p *Proxy) update(m message, line []byte) ([]byte, error) {
	var pr struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			Kind       string `json:"sessionUpdate"`
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
			ToolKind   string `json:"kind"`
			Status     string `json:"status"`
			// An object in message chunks, an array in tool calls.
			Content json.RawMessage `json:"content"`
		} `json:"update"`
	}
	if json.Unmarshal(m.Params, &pr) != nil {
		return line, nil
	}
	u := pr.Update
	switch u.Kind {
	case "tool_call", "tool_call_update":
		if u.Status == "completed" || u.Status == "failed" {
			p.finished(pr.SessionID, u.ToolCallID)
		} else if u.Kind == "tool_call" || u.Status != "" {
			p.announce(pr.SessionID, u.ToolCallID, u.Title, u.ToolKind)
		}
	case "agent_message_chunk":
		var cb struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if s := p.session(pr.SessionID); s != nil && json.Unmarshal(u.Content, &cb) == nil && cb.Type == "text" {
			p.mu.Lock()
			s.reply.WriteString(cb.Text)
			p.mu.Unlock()
		}
	case "available_commands_update":
		if s := p.session(pr.SessionID); s != nil {
			p.mu.Lock()
			s.advertised = true
			p.mu.Unlock()
		}
		return withOwnCommands(line)
	}
	return line, nil
}

// announce notes the tool call the agent is about to run in session id.
func (p *Proxy) announce(id, call, title, kind string) {
	s := p.session(id)
	if s == nil || call == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.tool.id == call && title == "" && kind == "" {
		return
	}
	name := title
	if name == "" {
		name = kind
	}
	if s.tool.id == call && name == "" {
		name = s.tool.name
	}
	s.tool = toolCall{id: call, name: name}
}

// finished notes that tool call call of session id ended: a write after
// it is not its. (Gemini CLI announces a tool call only once it has run:
// its writes come before the call is known, each in a step of its own.)
func (p *Proxy) finished(id, call string) {
	s := p.session(id)
	if s == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.tool.id == call {
		s.tool = toolCall{}
	}
}

// step opens the step of the tool call announced last in s, opening a
// turn first when the session has none.
func (p *Proxy) step(ctx context.Context, s *session, tool string) (controller.Step, error) {
	p.mu.Lock()
	o := controller.StepOptions{Key: s.tool.id, Tool: s.tool.name}
	p.mu.Unlock()
	if o.Tool == "" {
		o.Tool = tool
	}
	st, err := s.c.BeginStep(ctx, o)
	if errors.Is(err, controller.ErrNoOpenTurn) {
		if _, err = s.c.BeginTurn(ctx, "(the agent, before any prompt)", controller.TurnOptions{Ensure: true}); err == nil {
			st, err = s.c.BeginStep(ctx, o)
		}
	}
	return st, err
}

// captureWrite captures path before the client writes it for the agent.
// An error refuses the write: ckpt could not keep what it would replace.
// Paths ckpt never records (outside the workspace, in .git) are written
// uncaptured.
func (p *Proxy) captureWrite(ctx context.Context, id, path string) error {
	s := p.session(id)
	if s == nil {
		p.log.Warn("a write in an ACP session ckpt does not record: not captured", "session", id, "path", path)
		return nil
	}
	st, err := p.step(ctx, s, "fs/write_text_file")
	if err != nil {
		return err
	}
	_, errs := s.c.Capture(ctx, controller.CaptureOptions{Paths: []string{path}, Step: &st})
	err = errs[0]
	if errors.Is(err, controller.ErrOutsideWorkspace) || errors.Is(err, controller.ErrVCSDir) {
		p.log.Warn("write not captured", "path", path, "err", err)
		return nil
	}
	return err
}

// terminal opens a step for a terminal the agent runs: scan mode covers
// what it changes.
func (p *Proxy) terminal(ctx context.Context, id, command string) {
	s := p.session(id)
	if s == nil {
		return
	}
	if _, err := p.step(ctx, s, "terminal: "+command); err != nil {
		p.log.Warn("could not open a step for a terminal", "session", id, "err", err)
	}
}

// refuse answers the agent's request id with an error, without
// forwarding it: ckpt could not capture what it would overwrite.
func (p *Proxy) refuse(id json.RawMessage, err error) error {
	msg := "ckpt could not save the file before it is written, so it was not written: " + oneLine(err)
	b, merr := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32603, "message": msg}})
	if merr != nil {
		return merr
	}
	p.log.Warn("refused a write", "err", err)
	return p.toAgent.write(append(b, '\n'))
}

// notify sends the client a session/update of session id.
func (p *Proxy) notify(id string, update json.RawMessage) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update",
		"params": map[string]any{"sessionId": id, "update": update}})
	if err != nil {
		return err
	}
	return p.toClient.write(append(b, '\n'))
}

// oneLine is err on one line, without the packages' prefixes.
func oneLine(err error) string {
	s := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	return strings.NewReplacer("controller: ", "", "checkpoints: ", "", "capture: ", "", "cas: ", "").Replace(s)
}
