package main

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

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/atomicfile"
)

// The resident hook server: `ckpt serve` accepts agent hook events at
//
//	POST /hook/claude, POST /hook/generic   the event's JSON as the body,
//	                                         with "Authorization: Bearer TOKEN"
//	GET  /hook/ping?nonce=N                  who it is, and its proof (below)
//	POST /hook/stop                          stops a --hooks server (202),
//	                                         for a client that proves it holds the key
//
// and handles each event as `ckpt hook AGENT` would (handleHook, the one
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
// (the workspace; the home directory for --user) and nothing else. The
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

// hookIdle is how long an open session stays open with no event; the
// sweep runs every hookIdle/2.
const hookIdle = 2 * time.Minute

type hookServerConfig struct {
	Addr   string      `json:"addr"`
	Key    string      `json:"key"`
	Tokens []hookToken `json:"tokens"`
}

// hookToken is one install's token and the directory it is good for.
type hookToken struct {
	Token string `json:"token"`
	Root  string `json:"root"`
}

// tokenFor returns the token of the install rooted at root, if any.
func (cfg hookServerConfig) tokenFor(root string) string {
	for _, t := range cfg.Tokens {
		if t.Root == root {
			return t.Token
		}
	}
	return ""
}

// scopeOf returns the root the token is good for.
func (cfg hookServerConfig) scopeOf(token string) (string, bool) {
	for _, t := range cfg.Tokens {
		if token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(t.Token)) == 1 {
			return t.Root, true
		}
	}
	return "", false
}

// errOldHookServer: hook-server.json was written by a ckpt without
// per-install tokens and a key.
var errOldHookServer = errors.New("the hook server configuration is from an older ckpt")

// loadHookServer reads the store's hook server configuration; ok is false
// when there is none. A file or directory other users could read or
// replace is an error: its key is what proves the server.
func loadHookServer(store string) (cfg hookServerConfig, ok bool, err error) {
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
		return cfg, false, fmt.Errorf("%s: %w (run ckpt install claude --http again)", path, errOldHookServer)
	}
	valid := cfg.Addr != "" && tokenBits(cfg.Key) >= 2*minTokenBits
	for _, t := range cfg.Tokens {
		valid = valid && tokenBits(t.Token) >= minTokenBits && filepath.IsAbs(t.Root)
	}
	if !valid {
		return cfg, false, fmt.Errorf("%s: not a hook server configuration (run ckpt install claude --http again)", path)
	}
	return cfg, true, nil
}

// configureHookServer makes the store's hook server listen on addr and
// gives the install rooted at root a token (the one it has, else a new
// random one). A store with no configuration, or an older one, gets a new
// key, and every older token stops working.
func configureHookServer(store, addr, root string) (hookServerConfig, string, error) {
	cfg, ok, err := loadHookServer(store)
	if err != nil && !errors.Is(err, errOldHookServer) {
		return cfg, "", err
	}
	changed := false
	if !ok {
		key, err := randomHex(2 * minTokenBits / 8)
		if err != nil {
			return cfg, "", err
		}
		cfg, changed = hookServerConfig{Key: key}, true
	}
	tok := cfg.tokenFor(root)
	if tok == "" {
		if tok, err = serveToken(""); err != nil {
			return cfg, "", err
		}
		cfg.Tokens, changed = append(cfg.Tokens, hookToken{Token: tok, Root: root}), true
	}
	if cfg.Addr != addr {
		cfg.Addr, changed = addr, true
	}
	if !changed {
		return cfg, tok, nil
	}
	return cfg, tok, writeHookServer(store, cfg)
}

// dropHookToken forgets the token of the install rooted at root (an
// uninstall): hooks that still carry it are refused.
func dropHookToken(store, root string) error {
	cfg, ok, err := loadHookServer(store)
	if err != nil || !ok || cfg.tokenFor(root) == "" {
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

func writeHookServer(store string, cfg hookServerConfig) error {
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

// freeHookPort chooses a port in [hookPortLow, hookPortHigh) nothing
// listens on now.
func freeHookPort() (string, error) {
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

// hookURL is the URL Claude Code's http hook posts to.
func hookURL(addr string, strict bool) string {
	u := "http://" + addr + "/hook/claude"
	if strict {
		u += "?strict=1"
	}
	return u
}

// hookServerPing is GET /hook/ping's answer. Proof is the HMAC under the
// store's key of the ping's nonce and the rest of the answer
// (pingProof); Challenge is what a client that holds the key answers to
// stop the server (stopProof).
type hookServerPing struct {
	Ckpt      string `json:"ckpt"`
	Store     string `json:"store"`
	Pid       int    `json:"pid"`
	Challenge string `json:"challenge,omitempty"`
	Proof     string `json:"proof,omitempty"`
}

// pingProof is the proof a server holding key gives for a ping with nonce
// sent to host (the address the client dialled, as its Host header says:
// a proof one server gave cannot be passed off at another address).
func pingProof(key, nonce, host string, who hookServerPing) string {
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

// hookProbe is what answers at the hook server's address.
type hookProbe int

const (
	hookDown     hookProbe = iota // nothing listens there
	hookUp                        // this store's server, proven
	hookStranger                  // something that cannot prove it is
)

// probeHookServer asks whatever listens at cfg.Addr to prove it is this
// store's hook server. It sends a random nonce and nothing else: no
// token, no key.
func probeHookServer(store string, cfg hookServerConfig, timeout time.Duration) (hookServerPing, hookProbe) {
	var who hookServerPing
	nonce, err := randomHex(32)
	if err != nil {
		return who, hookStranger
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+cfg.Addr+"/hook/ping?nonce="+url.QueryEscape(nonce), nil)
	if err != nil {
		return who, hookStranger
	}
	cl := http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return who, hookDown
		}
		return who, hookStranger
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&who) != nil {
		return who, hookStranger
	}
	want := pingProof(cfg.Key, nonce, cfg.Addr, who)
	if who.Store != store || !hmac.Equal([]byte(who.Proof), []byte(want)) {
		return who, hookStranger
	}
	return who, hookUp
}

// strangerWarning is the warning for a listener at the hook server's
// address that could not prove it is ckpt's.
func strangerWarning(addr string) string {
	return fmt.Sprintf("something that cannot prove it is this ckpt's hook server listens at %s (another program, or another user's); ckpt sent it nothing, but Claude Code's tool-call hooks post there: this prompt's turn records the whole workspace instead; stop that program, or choose another port: ckpt install claude --http --port N", addr)
}

// stopHookServer stops the store's hook server listening at old.Addr, if
// it proves it is there, and waits (a few seconds at most) until it has
// let go of the lock that lets the hooks start another. It asks the
// server to stop (POST /hook/stop with the answer to its challenge) rather
// than signal the pid its ping names.
func stopHookServer(store string, old hookServerConfig) {
	who, st := probeHookServer(store, old, 500*time.Millisecond)
	if st != hookUp {
		return
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+old.Addr+"/hook/stop", nil)
	if err != nil {
		return
	}
	req.Header.Set(stopHeader, stopProof(old.Key, who.Challenge))
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

// stopHeader carries stopProof.
const stopHeader = "X-Ckpt-Stop"

// ensureHookServer makes sure the store's hook server (if one is
// configured) runs and proves it is this store's before the agent's tool
// calls post to it: what the command hooks `ckpt install claude --http`
// keeps (session start, prompt) do. Nothing listening: it starts `ckpt
// serve --hooks` in the background and waits for its proof. It returns
// what is wrong when tool calls will not reach a proven server ("" when
// they will), or, dir given, when no install's token is good for dir: the
// prompt's turn then records the whole workspace.
func (a *app) ensureHookServer(dir string) (problem string) {
	cfg, ok, err := loadHookServer(a.store)
	if err != nil {
		return oneLine(err) + "; tool calls are not captured, this prompt's turn records the whole workspace instead"
	}
	if !ok {
		return ""
	}
	if dir != "" {
		covered := false
		if root, err := controller.WorkspaceRoot(dir); err == nil {
			for _, t := range cfg.Tokens {
				covered = covered || within(t.Root, root)
			}
		}
		if !covered {
			return fmt.Sprintf("no ckpt install --http is for %s, so the hook server refuses its tool calls; this prompt's turn records the whole workspace instead (run ckpt install claude --http there)", dir)
		}
	}
	_, st := probeHookServer(a.store, cfg, 500*time.Millisecond)
	if st == hookDown {
		if err := a.startDetached(serverLockFile, serverLogFile, "serve", "--hooks", "--idle", "2h"); err != nil {
			return "start the hook server: " + oneLine(err) + "; this prompt's turn records the whole workspace instead (ckpt serve --hooks)"
		}
		for try := 0; try < 100 && st == hookDown; try++ {
			time.Sleep(30 * time.Millisecond)
			_, st = probeHookServer(a.store, cfg, 500*time.Millisecond)
			if st == hookDown && try >= 5 && !bgRunning(a.store, serverLockFile) {
				break // it exited: its log says why
			}
		}
	}
	switch st {
	case hookUp:
		return ""
	case hookStranger:
		return strangerWarning(cfg.Addr)
	}
	return "the hook server did not start (see " + filepath.Join(a.store, serverLogFile) + "); this prompt's turn records the whole workspace instead"
}

// hookServerProblem says what is wrong with the store's hook server when
// Claude Code's settings for project (its .claude/settings.local.json, or
// ~/.claude/settings.json) send tool calls to it: "" when nothing is, or
// when they do not; down says nothing listens there.
func hookServerProblem(store, project string) (problem string, down bool) {
	var files []string
	if project != "" && filepath.IsAbs(project) {
		files = append(files, filepath.Join(project, ".claude", "settings.local.json"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	cfg, ok, err := loadHookServer(store)
	for _, f := range files {
		b, rerr := os.ReadFile(f)
		if rerr != nil || !bytes.Contains(b, []byte(`/hook/claude`)) {
			continue
		}
		switch {
		case err != nil:
			return "hook server not configured: " + oneLine(err), false
		case !ok || !bytes.Contains(b, []byte(`"http://`+cfg.Addr+`/hook/claude`)):
			continue
		}
		switch _, st := probeHookServer(store, cfg, 300*time.Millisecond); st {
		case hookDown:
			return "hook server down, edits not captured (ckpt serve --hooks)", true
		case hookStranger:
			return "hook port " + cfg.Addr + " held by a program that is not ckpt, tool calls go to it", false
		}
		return "", false
	}
	return "", false
}

type hookServer struct {
	a     *app              // the store, and stderr for the log
	st    *controller.Store // a.store, opened once: every kept session shares its blob store
	logMu sync.Mutex
	last  atomic.Int64 // unix nanoseconds of the last event or ping

	// challenge is what a client proves it holds the key with to stop
	// the server (stopProof); random per process.
	challenge string

	// stop, when set (ckpt serve --hooks), stops the server: what POST
	// /hook/stop does.
	stop func()

	cfgMu   sync.Mutex
	cfg     hookServerConfig // the store's (config)
	cfgFile os.FileInfo      // its file when read

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

// newHookServer returns the hook server of a's store. Its tokens and key
// are the store's hook server configuration (none: every event is
// refused), read again whenever its file changes (an install or an
// uninstall since).
func newHookServer(a *app) *hookServer {
	s := &hookServer{a: a, st: controller.OpenStore(a.store), kept: map[keptKey]*keptSession{}}
	s.challenge, _ = randomHex(32)
	s.last.Store(time.Now().UnixNano())
	return s
}

// config returns the store's hook server configuration as its file holds
// it now.
func (s *hookServer) config() hookServerConfig {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	fi, err := os.Stat(filepath.Join(s.a.store, hookServerFile))
	if err == nil && s.cfgFile != nil && os.SameFile(fi, s.cfgFile) && fi.ModTime().Equal(s.cfgFile.ModTime()) && fi.Size() == s.cfgFile.Size() {
		return s.cfg
	}
	s.cfg, s.cfgFile = hookServerConfig{}, fi
	if err == nil {
		cfg, ok, err := loadHookServer(s.a.store)
		switch {
		case err != nil:
			s.logf("ckpt: hook server: %s", oneLine(err))
		case ok:
			s.cfg = cfg
		}
	}
	return s.cfg
}

// scope returns the root the request's token is good for.
func (s *hookServer) scope(r *http.Request) (string, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return "", false
	}
	return s.config().scopeOf(got)
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
	agent := strings.TrimPrefix(r.URL.Path, "/hook/")
	switch {
	case agent == "ping" && r.Method == http.MethodGet:
		// No token: a client sends its token only once the answer
		// proves this is the store's server.
		s.last.Store(time.Now().UnixNano()) // the prompt's check keeps the server up for its turn
		who := hookServerPing{Ckpt: buildVersion().String(), Store: s.a.store, Pid: os.Getpid(), Challenge: s.challenge}
		if nonce := r.URL.Query().Get("nonce"); nonce != "" {
			if key := s.config().Key; key != "" {
				who.Proof = pingProof(key, nonce, r.Host, who)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(who)
		return
	case agent == "stop" && r.Method == http.MethodPost && s.stop != nil:
		key := s.config().Key
		if key == "" || !hmac.Equal([]byte(r.Header.Get(stopHeader)), []byte(stopProof(key, s.challenge))) {
			http.Error(w, "stopping the hook server takes its key", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		s.stop()
		return
	}
	scope, ok := s.scope(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ckpt"`)
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	switch {
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
	o := hookOptions{agent: agent, strict: r.URL.Query().Get("strict") == "1", scope: scope}
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
	if f != nil && f.refused {
		http.Error(w, "ckpt: "+f.msg, http.StatusForbidden)
		return
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
// else as Store.Locate does.
func (s *hookServer) locate(ctx context.Context, dir, session string) (controller.Location, error) {
	s.mu.Lock()
	for k, e := range s.kept {
		if k.session == session && !e.dead && e.c != nil && within(k.ws, filepath.Clean(dir)) && e.c.WorkspaceRoot() == k.ws {
			s.mu.Unlock()
			return controller.Location{Workspace: k.ws, Session: session, Found: true, OfSession: true}, nil
		}
	}
	s.mu.Unlock()
	return s.st.Locate(ctx, dir, session)
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
	indexPath := filepath.Join(s.st.SessionDir(session), "index.db") // see Store.HasIndex
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
		c, err := s.st.Open(context.WithoutCancel(ctx), controller.Options{Workspace: ws, Session: session})
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
	s.st.Close() // the blob store closes with the last kept session
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
