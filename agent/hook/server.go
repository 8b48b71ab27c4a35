package hook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/paths"
	"github.com/ckpt/ckpt/internal/token"
)

// The resident hook server: `ckpt serve` accepts agent hook events at
//
//	POST /hook/claude, POST /hook/generic   the event's JSON as the body,
//	                                         with "Authorization: Bearer TOKEN"
//	GET  /hook/ping?nonce=N                  who it is, and its proof (below)
//	POST /hook/stop                          stops a --hooks server (202),
//	                                         for a client that proves it holds the key
//
// and handles each event as `ckpt hook AGENT` would (Handler, the one
// implementation), but with the session's controller kept open across
// events: no process start-up, no opening of the store per event. Claude
// Code's "http" hooks POST the same JSON a command hook reads on stdin;
// any 2xx answer with an empty body lets the tool call go on, and so does
// any failure to answer (Claude Code treats it as a non-blocking error).
// A blocking failure (?strict=1, what --strict is for the command)
// answers 200 with Claude Code's PreToolUse "deny" decision.
//
// `ckpt install claude --http` configures it once per store:
//
//	STORE/hook-server.json   mode 0600:
//	{"addr": "127.0.0.1:PORT", "key": HEX,
//	 "tokens": [{"token": HEX, "root": DIR}, ...]}
//
// and `ckpt serve --hooks` serves that address. Each install has a token
// of its own, good for hook events of workspaces at or below its root
// (the workspace; for --user, the directories below the home directory
// but not the home directory itself nor its hidden directories: see
// Token.Covers) and nothing else. The
// key never leaves the store: a server proves it is this store's by
// answering a ping's nonce with an HMAC under the key, and ckpt sends no
// token, and stops nothing, at an address that has not proven it (another
// local user may listen on the port while the server is down).
const hookServerFile = "hook-server.json"

// hookPortLow and hookPortHigh bound the port an install chooses when not
// told one: below the usual ephemeral range, so outgoing connections do
// not take it, and different on each machine, so it is no well-known port
// another user can wait on.
const hookPortLow, hookPortHigh = 20000, 32768

// Idle is how long an open session stays open with no event; the
// sweep runs every Idle/2.
const Idle = 2 * time.Minute

// Config is the store's hook server configuration (hook-server.json):
// its address, its key, and each install's token.
type Config struct {
	Addr   string  `json:"addr"`
	Key    string  `json:"key"`
	Tokens []Token `json:"tokens"`
}

// Token is one install's token and the directory it is good for.
type Token struct {
	Token string `json:"token"`
	Root  string `json:"root"`
	// User: a --user install's, whose Root is the home directory.
	User bool `json:"user,omitempty"`
}

// Covers says whether the token is good for hook events of the workspace
// rooted at ws (symlinks resolved): ws is Root or below it; for a --user
// install's token, strictly below the home directory and not in one of
// its hidden directories (~/.ssh, ~/.config, ~/.claude, ...), so a session
// rooted at the home directory, which could capture every file in it,
// takes a workspace install there.
func (t Token) Covers(ws string) bool {
	if !paths.Within(t.Root, ws) {
		return false
	}
	if !t.User {
		return true
	}
	rel, err := filepath.Rel(t.Root, ws)
	return err == nil && rel != "." && !strings.HasPrefix(rel, ".")
}

// TokenFor returns the token of the install rooted at root, if any.
func (cfg Config) TokenFor(root string) string {
	for _, t := range cfg.Tokens {
		if t.Root == root {
			return t.Token
		}
	}
	return ""
}

// scopeOf returns the install the token is of.
func (cfg Config) scopeOf(token string) (Token, bool) {
	for _, t := range cfg.Tokens {
		if token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(t.Token)) == 1 {
			return t, true
		}
	}
	return Token{}, false
}

// ErrOldConfig: hook-server.json was written by a ckpt without
// per-install tokens and a key.
var ErrOldConfig = errors.New("the hook server configuration is from an older ckpt")

// LoadConfig reads the store's hook server configuration; ok is false
// when there is none. A file or directory other users could read or
// replace is an error: its key is what proves the server.
func LoadConfig(store string) (cfg Config, ok bool, err error) {
	path := filepath.Join(store, hookServerFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o077 != 0 {
			return cfg, false, fmt.Errorf("%s: other users can read it, so its key and tokens may be known (remove it, then run ckpt install claude --http again in each workspace)", path)
		}
		if fi, err := os.Stat(store); err != nil || fi.Mode().Perm()&0o022 != 0 {
			return cfg, false, fmt.Errorf("%s: other users can write the store directory, so they could replace the hook server's key (chmod 700 %s)", path, store)
		}
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, false, fmt.Errorf("%s: not a hook server configuration (run ckpt install claude --http again)", path)
	}
	if cfg.Key == "" && cfg.Tokens == nil {
		return cfg, false, fmt.Errorf("%s: %w (run ckpt install claude --http again)", path, ErrOldConfig)
	}
	valid := cfg.Addr != "" && token.Bits(cfg.Key) >= 2*token.MinBits
	for _, t := range cfg.Tokens {
		valid = valid && token.Bits(t.Token) >= token.MinBits && filepath.IsAbs(t.Root)
	}
	if !valid {
		return cfg, false, fmt.Errorf("%s: not a hook server configuration (run ckpt install claude --http again)", path)
	}
	return cfg, true, nil
}

// ServerConfig is the store's hook server configuration (LoadConfig), or
// an error saying how to make one when there is none (`ckpt serve
// --hooks`).
func ServerConfig(store string) (Config, error) {
	cfg, ok, err := LoadConfig(store)
	if err == nil && !ok {
		err = fmt.Errorf("no hook server configured in %s (run ckpt install claude --http)", store)
	}
	return cfg, err
}

// Configure makes the store's hook server listen on addr and gives the
// install rooted at root (user: a --user install's) a token (the one it
// has, else a new random one). A store with no configuration, or an older
// one, gets a new key, and every older token stops working.
func Configure(store, addr, root string, user bool) (Config, string, error) {
	cfg, ok, err := LoadConfig(store)
	if err != nil && !errors.Is(err, ErrOldConfig) {
		return cfg, "", err
	}
	changed := false
	if !ok {
		key, err := randomHex(2 * token.MinBits / 8)
		if err != nil {
			return cfg, "", err
		}
		cfg, changed = Config{Key: key}, true
	}
	tok := cfg.TokenFor(root)
	if tok == "" {
		if tok, err = token.New(); err != nil {
			return cfg, "", err
		}
		cfg.Tokens, changed = append(cfg.Tokens, Token{Token: tok, Root: root, User: user}), true
	}
	for i, t := range cfg.Tokens {
		if t.Root == root && t.User != user {
			cfg.Tokens[i].User, changed = user, true
		}
	}
	if cfg.Addr != addr {
		cfg.Addr, changed = addr, true
	}
	if !changed {
		return cfg, tok, nil
	}
	return cfg, tok, writeHookServer(store, cfg)
}

// DropToken forgets the token of the install rooted at root (an
// uninstall): hooks that still carry it are refused.
func DropToken(store, root string) error {
	cfg, ok, err := LoadConfig(store)
	if err != nil || !ok || cfg.TokenFor(root) == "" {
		return err
	}
	kept := cfg.Tokens[:0]
	for _, t := range cfg.Tokens {
		if t.Root != root {
			kept = append(kept, t)
		}
	}
	cfg.Tokens = kept
	return writeHookServer(store, cfg)
}

func writeHookServer(store string, cfg Config) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(store, hookServerFile), append(b, '\n'), 0o600)
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// FreePort chooses a port in [hookPortLow, hookPortHigh) nothing
// listens on now.
func FreePort() (string, error) {
	for try := 0; try < 50; try++ {
		n, err := rand.Int(rand.Reader, big.NewInt(hookPortHigh-hookPortLow))
		if err != nil {
			return "", err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(hookPortLow+int(n.Int64())))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr, nil
		}
	}
	return "", errors.New("no free port for the hook server (give one: --port)")
}

// Ping is GET /hook/ping's answer. Proof is the HMAC under the
// store's key of the ping's nonce and the rest of the answer
// (pingProof); Challenge is what a client that holds the key answers to
// stop the server (stopProof).
type Ping struct {
	Ckpt      string `json:"ckpt"`
	Store     string `json:"store"`
	Pid       int    `json:"pid"`
	Challenge string `json:"challenge,omitempty"`
	Proof     string `json:"proof,omitempty"`
}

// pingProof is the proof a server holding key gives for a ping with nonce
// sent to host (the address the client dialled, as its Host header says:
// a proof one server gave cannot be passed off at another address).
func pingProof(key, nonce, host string, who Ping) string {
	return keyMAC(key, "ckpt hook server ping", nonce, host, who.Ckpt, who.Store, strconv.Itoa(who.Pid), who.Challenge)
}

// stopProof is what a client holding key sends to stop the server that
// gave challenge.
func stopProof(key, challenge string) string {
	return keyMAC(key, "ckpt hook server stop", challenge)
}

func keyMAC(key string, parts ...string) string {
	m := hmac.New(sha256.New, []byte(key))
	for _, p := range parts {
		fmt.Fprintf(m, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Status is what answers at the hook server's address.
type Status int

const (
	Down     Status = iota // nothing listens there
	Up                     // this store's server, proven
	Stranger               // something that cannot prove it is
)

// Probe asks whatever listens at cfg.Addr to prove it is this
// store's hook server. It sends a random nonce and nothing else: no
// token, no key.
func Probe(store string, cfg Config, timeout time.Duration) (Ping, Status) {
	var who Ping
	nonce, err := randomHex(32)
	if err != nil {
		return who, Stranger
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+cfg.Addr+"/hook/ping?nonce="+url.QueryEscape(nonce), nil)
	if err != nil {
		return who, Stranger
	}
	cl := http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return who, Down
		}
		return who, Stranger
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&who) != nil {
		return who, Stranger
	}
	want := pingProof(cfg.Key, nonce, cfg.Addr, who)
	if who.Store != store || !hmac.Equal([]byte(who.Proof), []byte(want)) {
		return who, Stranger
	}
	return who, Up
}

// Stop asks the store's hook server listening at old.Addr to stop, if it
// proves it is there (POST /hook/stop with the answer to its challenge,
// rather than a signal to the pid its ping names), and says whether the
// server accepted. The server lets go of its lock soon after.
func Stop(store string, old Config) bool {
	who, st := Probe(store, old, 500*time.Millisecond)
	if st != Up {
		return false
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+old.Addr+"/hook/stop", nil)
	if err != nil {
		return false
	}
	req.Header.Set(stopHeader, stopProof(old.Key, who.Challenge))
	cl := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := cl.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}

// stopHeader carries stopProof.
const stopHeader = "X-Ckpt-Stop"

// Server is the resident hook server, an http.Handler: it takes agents'
// hook events (POST /hook/AGENT, for agents with http hooks and the
// generic protocol) with an install's token, proves itself to clients
// that ping it (GET /hook/ping), and stops for one that holds the key
// (POST /hook/stop, when Shutdown is set). It keeps each session's
// controller open across events.
type Server struct {
	// Shutdown, when set (ckpt serve --hooks), stops the server: what
	// POST /hook/stop does.
	Shutdown func()

	hd      *Handler          // the store, and how events are handled
	st      *controller.Store // hd.Store, opened once: every kept session shares its blob store
	version string            // the ckpt version pings name
	log     io.Writer         // where messages go
	logMu   sync.Mutex
	last    atomic.Int64 // unix nanoseconds of the last event or ping

	// challenge is what a client proves it holds the key with to stop
	// the server (stopProof); random per process.
	challenge string

	cfgMu   sync.Mutex
	cfg     Config      // the store's (config)
	cfgFile os.FileInfo // its file when read

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
	refs  int
	used  time.Time
	dead  bool // forgotten or replaced: close when the last user is done
}

// NewServer returns the hook server of hd's store. Its tokens and key
// are the store's hook server configuration (none: every event is
// refused), read again whenever its file changes (an install or an
// uninstall since).
func NewServer(hd *Handler, version string, log io.Writer) *Server {
	s := &Server{hd: hd, st: controller.OpenStore(hd.Store), version: version, log: log, kept: map[keptKey]*keptSession{}}
	s.challenge, _ = randomHex(32)
	s.last.Store(time.Now().UnixNano())
	return s
}

// config returns the store's hook server configuration as its file holds
// it now.
func (s *Server) config() Config {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	fi, err := os.Stat(filepath.Join(s.hd.Store, hookServerFile))
	if err == nil && s.cfgFile != nil && os.SameFile(fi, s.cfgFile) && fi.ModTime().Equal(s.cfgFile.ModTime()) && fi.Size() == s.cfgFile.Size() {
		return s.cfg
	}
	s.cfg, s.cfgFile = Config{}, fi
	if err == nil {
		cfg, ok, err := LoadConfig(s.hd.Store)
		switch {
		case err != nil:
			s.logf("ckpt: hook server: %s", msg.OneLine(err))
		case ok:
			s.cfg = cfg
		}
	}
	return s.cfg
}

// scope returns the install the request's token is of.
func (s *Server) scope(r *http.Request) (Token, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return Token{}, false
	}
	return s.config().scopeOf(got)
}

// hookServerAgent is the agent named name when the server takes its
// events: one with http hooks, or the generic protocol (their events
// carry their working directory; the server's own is no one's).
func hookServerAgent(name string) agent.Agent {
	ag, ok := agent.Lookup(name)
	if _, http := ag.(agent.HTTPHooks); ok && (http || name == "generic") {
		return ag
	}
	return nil
}

// ServeHTTP answers /hook/ping, /hook/stop and /hook/AGENT.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	name := strings.TrimPrefix(r.URL.Path, "/hook/")
	switch {
	case name == "ping" && r.Method == http.MethodGet:
		// No token: a client sends its token only once the answer
		// proves this is the store's server.
		s.last.Store(time.Now().UnixNano()) // the prompt's check keeps the server up for its turn
		who := Ping{Ckpt: s.version, Store: s.hd.Store, Pid: os.Getpid(), Challenge: s.challenge}
		if nonce := r.URL.Query().Get("nonce"); nonce != "" {
			if key := s.config().Key; key != "" {
				who.Proof = pingProof(key, nonce, r.Host, who)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(who)
		return
	case name == "stop" && r.Method == http.MethodPost && s.Shutdown != nil:
		key := s.config().Key
		if key == "" || !hmac.Equal([]byte(r.Header.Get(stopHeader)), []byte(stopProof(key, s.challenge))) {
			http.Error(w, "stopping the hook server takes its key", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		s.Shutdown()
		return
	}
	scope, ok := s.scope(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ckpt"`)
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	ag := hookServerAgent(name)
	switch {
	case ag == nil:
		http.Error(w, "no such hook endpoint: "+r.URL.Path, http.StatusNotFound)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "hook events are POSTed", http.StatusMethodNotAllowed)
		return
	}
	s.last.Store(time.Now().UnixNano())
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxEvent))
	if err != nil {
		http.Error(w, "read event: "+err.Error(), http.StatusBadRequest)
		return
	}
	o := Options{Strict: r.URL.Query().Get("strict") == "1", Scope: &scope}
	var msgs bytes.Buffer
	rh := *s.hd
	rh.Say = func(format string, args ...any) { fmt.Fprintf(&msgs, format+"\n", args...) }
	// Handled to the end even when the agent stops waiting: it goes on
	// with the tool call, so the capture had better be complete.
	f := rh.handle(context.WithoutCancel(r.Context()), ag, o, data, s)
	if f != nil {
		rh.say("ckpt: hook: %s", f.Msg)
	}
	if msgs.Len() > 0 {
		s.logMu.Lock()
		s.log.Write(msgs.Bytes())
		s.logMu.Unlock()
	}
	if f != nil && f.Refused {
		http.Error(w, "ckpt: "+f.Msg, http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if f != nil && f.Block {
		if h, ok := ag.(agent.HTTPHooks); ok {
			w.Write(h.HTTPBlock(f))
			return
		}
		http.Error(w, "ckpt: "+f.Msg, http.StatusConflict)
		return
	}
	w.Write([]byte(ag.Reply(data, f)))
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
// else as Store.Resolve does for a hook (which records).
func (s *Server) locate(ctx context.Context, dir, session string) (controller.Location, error) {
	s.mu.Lock()
	for k, e := range s.kept {
		if k.session == session && !e.dead && e.c != nil && paths.Within(k.ws, filepath.Clean(dir)) && e.c.WorkspaceRoot() == k.ws {
			s.mu.Unlock()
			return controller.Location{Workspace: k.ws, Session: session, Found: true, OfSession: true}, nil
		}
	}
	s.mu.Unlock()
	return s.st.Resolve(ctx, controller.ResolveOptions{Dir: dir, Session: session, Create: true})
}

// open returns the session's kept controller, opening it on first use or
// when its index file was replaced since (another process discarded it).
func (s *Server) open(ctx context.Context, ws, session string) (*controller.Controller, func(), error) {
	k := keptKey{session, ws}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil, nil, errors.New("the hook server is stopping")
	}
	e := s.kept[k]
	if e != nil && e.c != nil && e.c.Replaced() { // opened (e.c is set under s.mu), and its index replaced since
		s.dropLocked(k, e)
		e = nil
	}
	if e == nil {
		e = &keptSession{ready: make(chan struct{})}
		s.kept[k] = e
		e.refs++
		s.mu.Unlock()
		c, err := s.st.Open(context.WithoutCancel(ctx), controller.Options{Workspace: ws, Session: session,
			Recovered: func(what string) { s.logf("ckpt: %s", what) }})
		s.mu.Lock()
		e.c, e.err = c, err
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

func (s *Server) release(k keptKey, e *keptSession) {
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
func (s *Server) dropLocked(k keptKey, e *keptSession) {
	if s.kept[k] == e {
		delete(s.kept, k)
	}
	e.dead = true
	if e.refs == 0 && e.c != nil {
		e.c.Close()
		e.c = nil
	}
}

func (s *Server) forget(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.kept {
		if k.session == session {
			s.dropLocked(k, e)
		}
	}
}

// Sweep closes the sessions idle for longer than idle.
func (s *Server) Sweep(idle time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.kept {
		if e.refs == 0 && e.c != nil && time.Since(e.used) > idle {
			s.dropLocked(k, e)
		}
	}
}

// Close closes every kept session; events after it fail.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	for k, e := range s.kept {
		s.dropLocked(k, e)
	}
	s.st.Close() // the blob store closes with the last kept session
}

// Keep sweeps the server's idle sessions (Sweep, every Idle/2) until ctx
// ends, or, with stopAfter > 0, until no event has come for that long: it
// then returns true, for the caller to stop serving.
func (s *Server) Keep(ctx context.Context, stopAfter time.Duration) (idled bool) {
	tick := time.NewTicker(Idle / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			s.Sweep(Idle)
			if stopAfter > 0 && s.IdleFor() > stopAfter {
				return true
			}
		}
	}
}

// IdleFor is how long the server has had no event.
func (s *Server) IdleFor() time.Duration {
	return time.Since(time.Unix(0, s.last.Load()))
}

func (s *Server) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.log, format+"\n", args...)
}
