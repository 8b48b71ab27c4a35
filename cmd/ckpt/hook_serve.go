package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
)

// The resident hook server: `ckpt serve` accepts agent hook events at
//
//	POST /hook/claude, POST /hook/generic   the event's JSON as the body
//	GET  /hook/ping                          {"ckpt": VERSION, "store": DIR, "pid": PID}
//	POST /hook/stop                          stops a --hooks server (202)
//
// with "Authorization: Bearer TOKEN", and handles each event as `ckpt
// hook AGENT` would (handleHook, the one implementation), but with the
// session's controller kept open across events: no process start-up, no
// opening of the store per event. Claude Code's "http" hooks POST the same
// JSON a command hook reads on stdin; any 2xx answer with an empty body
// lets the tool call go on, and so does any failure to answer (Claude
// Code treats it as a non-blocking error). A blocking failure (?strict=1,
// what --strict is for the command) answers 200 with Claude Code's
// PreToolUse "deny" decision.
//
// `ckpt install claude --http` configures it once per store:
//
//	STORE/hook-server.json   {"addr": "127.0.0.1:PORT", "token": HEX}, mode 0600
//
// and `ckpt serve --hooks` serves that address with that token.
const hookServerFile = "hook-server.json"

// defaultHookAddr is where the hook server listens unless install is told
// otherwise.
const defaultHookAddr = "127.0.0.1:7291"

// hookIdle is how long an open session stays open with no event; the
// sweep runs every hookIdle/2.
const hookIdle = 2 * time.Minute

type hookServerConfig struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
}

// loadHookServer reads the store's hook server configuration; ok is false
// when there is none.
func loadHookServer(store string) (cfg hookServerConfig, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(store, hookServerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Addr == "" || tokenBits(cfg.Token) < minTokenBits {
		return cfg, false, fmt.Errorf("%s: not a hook server configuration (run ckpt install claude --http again)", filepath.Join(store, hookServerFile))
	}
	return cfg, true, nil
}

// configureHookServer makes the store's hook server listen on addr,
// keeping its token (a new random one the first time).
func configureHookServer(store, addr string) (hookServerConfig, error) {
	cfg, ok, err := loadHookServer(store)
	if err != nil || !ok {
		tok, err := serveToken("")
		if err != nil {
			return cfg, err
		}
		cfg.Token = tok
	}
	if ok && cfg.Addr == addr {
		return cfg, nil
	}
	cfg.Addr = addr
	b, err := json.Marshal(cfg)
	if err != nil {
		return cfg, err
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return cfg, err
	}
	return cfg, atomicfile.WriteFile(filepath.Join(store, hookServerFile), append(b, '\n'), 0o600)
}

// hookURL is the URL Claude Code's http hook posts to.
func hookURL(addr string, strict bool) string {
	u := "http://" + addr + "/hook/claude"
	if strict {
		u += "?strict=1"
	}
	return u
}

// hookServerUp reports whether a ckpt hook server answers at cfg.Addr
// with cfg.Token.
func hookServerUp(cfg hookServerConfig, timeout time.Duration) bool {
	_, ok := pingHookServer(cfg, timeout)
	return ok
}

// pingHookServer asks the hook server at cfg.Addr who it is.
func pingHookServer(cfg hookServerConfig, timeout time.Duration) (who hookServerPing, ok bool) {
	req, err := http.NewRequest(http.MethodGet, "http://"+cfg.Addr+"/hook/ping", nil)
	if err != nil {
		return who, false
	}
	req.Header.Set("Authorization", "Bearer "+cfg.Token)
	cl := http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := cl.Do(req)
	if err != nil {
		return who, false
	}
	defer resp.Body.Close()
	ok = resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&who) == nil && who.Ckpt != ""
	return who, ok
}

// hookServerPing is GET /hook/ping's answer.
type hookServerPing struct {
	Ckpt  string `json:"ckpt"`
	Store string `json:"store"`
	Pid   int    `json:"pid"`
}

// stopHookServer stops the store's hook server listening at old.Addr, if
// one answers there, and waits (a few seconds at most) until it has let go
// of the lock that lets the hooks start another. It asks the server to
// stop (POST /hook/stop with the token) rather than signal the pid its
// ping names: whatever listens at that address (another local user's
// listener on a well-known port) could name any process of ours.
func stopHookServer(store string, old hookServerConfig) {
	who, ok := pingHookServer(old, 500*time.Millisecond)
	if !ok || who.Store != store {
		return
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+old.Addr+"/hook/stop", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+old.Token)
	cl := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := cl.Do(req)
	if err != nil {
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return
	}
	for try := 0; try < 100 && bgRunning(store, serverLockFile); try++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// ensureHookServer starts `ckpt serve --hooks` in the background when the
// store has a hook server configured and none answers: what the command
// hooks `ckpt install claude --http` keeps (session start, prompt) do, so
// the http hook of the next tool call finds a server.
func (a *app) ensureHookServer() {
	cfg, ok, err := loadHookServer(a.store)
	if err != nil {
		a.say("ckpt: hook: warning: %s", oneLine(err))
		return
	}
	if !ok || hookServerUp(cfg, 500*time.Millisecond) {
		return
	}
	if err := a.startDetached(serverLockFile, serverLogFile, "serve", "--hooks", "--idle", "2h"); err != nil {
		a.say("ckpt: hook: warning: start the hook server: %s; tool calls go uncaptured until it runs (ckpt serve --hooks)", oneLine(err))
	}
}

// hookServerDown reports whether Claude Code's settings for project (its
// .claude/settings.local.json, or ~/.claude/settings.json) send tool calls
// to the store's hook server and that server does not answer: the edits
// then go uncaptured, which the status line says.
func hookServerDown(store, project string) bool {
	cfg, ok, err := loadHookServer(store)
	if err != nil || !ok {
		return false
	}
	url := []byte(`"http://` + cfg.Addr + `/hook/claude`)
	var files []string
	if project != "" && filepath.IsAbs(project) {
		files = append(files, filepath.Join(project, ".claude", "settings.local.json"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, url) {
			return !hookServerUp(cfg, 300*time.Millisecond)
		}
	}
	return false
}

// hookServer handles hook events over HTTP for any session and workspace
// of the store, keeping one controller per session open between events.
// It is safe for concurrent use.
type hookServer struct {
	a     *app // the store, and stderr for the log
	token string
	logMu sync.Mutex
	last  atomic.Int64 // unix nanoseconds of the last event

	// stop, when set (ckpt serve --hooks), stops the server: what POST
	// /hook/stop does.
	stop func()

	mu   sync.Mutex
	kept map[keptKey]*keptSession
	done bool
}

type keptKey struct{ session, ws string }

// keptSession is one open controller and who uses it.
type keptSession struct {
	ready chan struct{} // closed once c or err is set
	c     *controller.Controller
	err   error
	index os.FileInfo // the index file when opened: replaced means reopen
	refs  int
	used  time.Time
	dead  bool // forgotten or replaced: close when the last user is done
}

func newHookServer(a *app, token string) *hookServer {
	s := &hookServer{a: a, token: token, kept: map[keptKey]*keptSession{}}
	s.last.Store(time.Now().UnixNano())
	return s
}

// hookAgents are the agents whose events the server takes: those whose
// events carry their working directory (the server's own is no one's).
var hookAgents = map[string]bool{"claude": true, "generic": true}

func (s *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Browsers send Origin on a cross-site POST; an agent never does.
	if r.Header.Get("Origin") != "" {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	// A page whose DNS name was rebound to this address sends its own
	// name as Host: only the address the connection came to is taken.
	if !hookHostAllowed(r) {
		http.Error(w, "host is not this server's address", http.StatusForbidden)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || s.token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ckpt"`)
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	agent := strings.TrimPrefix(r.URL.Path, "/hook/")
	switch {
	case agent == "ping" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(hookServerPing{Ckpt: buildVersion().String(), Store: s.a.store, Pid: os.Getpid()})
		return
	case agent == "stop" && r.Method == http.MethodPost && s.stop != nil:
		w.WriteHeader(http.StatusAccepted)
		s.stop()
		return
	case !hookAgents[agent]:
		http.Error(w, "no such hook endpoint: "+r.URL.Path, http.StatusNotFound)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "hook events are POSTed", http.StatusMethodNotAllowed)
		return
	}
	s.last.Store(time.Now().UnixNano())
	data, err := io.ReadAll(io.LimitReader(r.Body, maxHookInput))
	if err != nil {
		http.Error(w, "read event: "+err.Error(), http.StatusBadRequest)
		return
	}
	o := hookOptions{agent: agent, strict: r.URL.Query().Get("strict") == "1"}
	var out, msgs bytes.Buffer
	ra := *s.a
	ra.stdin, ra.stdout, ra.stderr = nil, &out, &msgs
	// Handled to the end even when the agent stops waiting: it goes on
	// with the tool call, so the capture had better be complete.
	f := ra.handleHook(context.WithoutCancel(r.Context()), o, data, s)
	if f != nil {
		ra.say("ckpt: hook: %s", f.msg)
	}
	if msgs.Len() > 0 {
		s.logMu.Lock()
		s.a.stderr.Write(msgs.Bytes())
		s.logMu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	if f != nil && f.block {
		if agent == "claude" {
			json.NewEncoder(w).Encode(map[string]any{"hookSpecificOutput": map[string]string{
				"hookEventName":            "PreToolUse",
				"permissionDecision":       "deny",
				"permissionDecisionReason": "ckpt: " + f.msg,
			}})
			return
		}
		http.Error(w, "ckpt: "+f.msg, http.StatusConflict)
		return
	}
	w.Write([]byte(agentReply(agent, data, f)))
}

// hookHostAllowed says whether r's Host names the address its connection
// arrived on: that IP, or localhost when it is loopback, with its port.
func hookHostAllowed(r *http.Request) bool {
	name, port, err := net.SplitHostPort(strings.ToLower(r.Host))
	if err != nil {
		return false // an agent's hook URL always names the port
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok || port != strconv.Itoa(local.Port) {
		return false
	}
	if name == "localhost" {
		return local.IP.IsLoopback()
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.Equal(local.IP)
}

// locate answers from an open session when dir is inside its workspace,
// else as controller.Locate does.
func (s *hookServer) locate(ctx context.Context, dir, session string) (controller.Location, error) {
	s.mu.Lock()
	for k, e := range s.kept {
		if k.session == session && !e.dead && e.c != nil && within(k.ws, filepath.Clean(dir)) && e.c.WorkspaceRoot() == k.ws {
			s.mu.Unlock()
			return controller.Location{Workspace: k.ws, Session: session, Found: true, OfSession: true}, nil
		}
	}
	s.mu.Unlock()
	return controller.Locate(ctx, s.a.store, dir, session)
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// open returns the session's kept controller, opening it on first use or
// when its index file was replaced since (another process discarded it).
func (s *hookServer) open(ctx context.Context, ws, session string) (*controller.Controller, func(), error) {
	k := keptKey{session, ws}
	indexPath := filepath.Join(controller.SessionDir(s.a.store, session), "index.db") // see controller.HasIndex
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil, nil, errors.New("the hook server is stopping")
	}
	e := s.kept[k]
	if e != nil && e.c != nil { // opened (e.c is set under s.mu)
		if fi, err := os.Stat(indexPath); err != nil || e.index == nil || !os.SameFile(fi, e.index) {
			s.dropLocked(k, e)
			e = nil
		}
	}
	if e == nil {
		e = &keptSession{ready: make(chan struct{})}
		s.kept[k] = e
		e.refs++
		s.mu.Unlock()
		c, err := controller.Open(context.WithoutCancel(ctx), controller.Options{Workspace: ws, Session: session, Store: s.a.store})
		var index os.FileInfo
		if err == nil {
			index, _ = os.Stat(indexPath)
			if r := c.Recovered(); r != "" {
				s.logf("ckpt: %s", r)
			}
		}
		s.mu.Lock()
		e.c, e.err, e.index = c, err, index
		s.mu.Unlock()
		close(e.ready)
	} else {
		e.refs++
		s.mu.Unlock()
		<-e.ready
	}
	if e.err != nil {
		err := e.err
		s.release(k, e)
		return nil, nil, err
	}
	return e.c, func() { s.release(k, e) }, nil
}

func (s *hookServer) release(k keptKey, e *keptSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	e.used = time.Now()
	if e.err != nil && s.kept[k] == e {
		delete(s.kept, k)
	}
	if (e.dead || e.err != nil) && e.refs == 0 && e.c != nil {
		e.c.Close()
		e.c = nil
	}
}

// dropLocked forgets e (s.mu held): closed now if unused, else by its
// last user.
func (s *hookServer) dropLocked(k keptKey, e *keptSession) {
	if s.kept[k] == e {
		delete(s.kept, k)
	}
	e.dead = true
	if e.refs == 0 && e.c != nil {
		e.c.Close()
		e.c = nil
	}
}

func (s *hookServer) forget(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.kept {
		if k.session == session {
			s.dropLocked(k, e)
		}
	}
}

// sweep closes the sessions idle for longer than idle.
func (s *hookServer) sweep(idle time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.kept {
		if e.refs == 0 && e.c != nil && time.Since(e.used) > idle {
			s.dropLocked(k, e)
		}
	}
}

// close closes every kept session; events after it fail.
func (s *hookServer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	for k, e := range s.kept {
		s.dropLocked(k, e)
	}
}

// idleFor is how long the server has had no event.
func (s *hookServer) idleFor() time.Duration {
	return time.Since(time.Unix(0, s.last.Load()))
}

func (s *hookServer) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.a.stderr, format+"\n", args...)
}
