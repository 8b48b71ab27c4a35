package httpapi

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/jsondoc"
)

// Defaults for the zero fields of Options.
const (
	DefaultPollInterval = 250 * time.Millisecond
	DefaultKeepAlive    = 15 * time.Second
	DefaultBodyTimeout  = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// MaxBody bounds a request body, in bytes.
const MaxBody = 1 << 20

// Options configure NewHandler.
type Options struct {
	// Token is the bearer token every /api/ request must carry. An empty
	// token refuses every API request.
	Token string
	// Sessions enables GET /api/sessions, which lists the sessions of
	// the store the controller was opened from (Controller.Store).
	Sessions bool
	// Hosts are Host header values accepted besides the address the
	// connection arrived on: "name" (any port) or "name:port". For a
	// handler behind a reverse proxy.
	Hosts []string
	// Origins are origins ("https://app.example") allowed to make
	// requests besides the server's own.
	Origins []string
	// Logger receives refused requests (debug) and failures (error); nil
	// discards them.
	Logger *slog.Logger
	// PollInterval is how often the event stream reads the session's
	// change log (controller.WatchOptions.Interval); KeepAlive how often it sends a comment when idle.
	PollInterval, KeepAlive time.Duration
	// BodyTimeout bounds the time to read a request body; WriteTimeout
	// the time to write a response, and each event of the stream.
	BodyTimeout, WriteTimeout time.Duration
}

//go:embed web
var webFiles embed.FS

// handler is one NewHandler: one controller, its options.
type handler struct {
	c    *controller.Controller
	o    Options
	log  *slog.Logger
	mu   sync.Mutex // serializes mutating calls
	api  http.Handler
	page http.Handler
}

// NewHandler returns the HTTP API and web page for c (see the package doc
// for the routes' guards). The handler is safe for concurrent use; it
// serializes the calls that change the session. c must outlive it.
func NewHandler(c *controller.Controller, opts Options) http.Handler {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	h := &handler{c: c, o: opts, log: opts.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /api/session", h.session)
	m.HandleFunc("GET /api/sessions", h.sessions)
	m.HandleFunc("GET /api/checkpoints", h.checkpoints)
	m.HandleFunc("GET /api/conversation", h.conversation)
	m.HandleFunc("GET /api/diff", h.diff)
	m.HandleFunc("POST /api/rewind", h.rewind)
	m.HandleFunc("POST /api/undo", h.undo)
	m.HandleFunc("POST /api/redo", h.redo)
	m.HandleFunc("GET /api/history", h.history)
	m.HandleFunc("POST /api/fork", h.fork)
	m.HandleFunc("POST /api/summarize", h.summarize)
	m.HandleFunc("GET /api/events", h.events)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.error(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	h.api = m
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	h.page = http.FileServerFS(sub)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hostAllowed(r) {
		h.log.Debug("httpapi: refused host", "host", r.Host, "path", r.URL.Path)
		h.error(w, http.StatusForbidden, "host "+quote(r.Host)+" is not this server's address")
		return
	}
	isAPI := r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	if o := r.Header.Get("Origin"); (isAPI || !safe) && !h.originAllowed(r, o) {
		h.log.Debug("httpapi: refused origin", "origin", o, "path", r.URL.Path)
		h.error(w, http.StatusForbidden, "cross-origin request refused (origin "+quote(o)+")")
		return
	}
	if !isAPI && safe {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		// The file server answers a name fs.FS cannot hold (invalid
		// UTF-8, say) with a 500; no page file has such a name.
		if name := strings.TrimPrefix(path.Clean(r.URL.Path), "/"); name != "" && !fs.ValidPath(name) {
			h.error(w, http.StatusNotFound, "no such page file")
			return
		}
		h.page.ServeHTTP(w, r)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || h.o.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(h.o.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ckpt"`)
		h.error(w, http.StatusUnauthorized, "missing or wrong token")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.api.ServeHTTP(w, r)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hostAllowed says whether r's Host names this server: the address the
// connection arrived on, a loopback name for it, or an Options.Hosts entry.
func (h *handler) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	if host == "" {
		return false
	}
	for _, a := range h.o.Hosts {
		if a = strings.ToLower(a); a == host {
			return true
		}
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the scheme's default.
		name, port = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80"
	}
	for _, a := range h.o.Hosts {
		if strings.ToLower(a) == name {
			return true
		}
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	var localIP net.IP
	if tcp, ok := local.(*net.TCPAddr); ok {
		if port != strconv.Itoa(tcp.Port) {
			return false
		}
		localIP = tcp.IP
	} else if local != nil {
		return false // not TCP: only Options.Hosts can name it
	}
	if name == "localhost" {
		return localIP == nil || localIP.IsLoopback()
	}
	ip := net.ParseIP(name)
	if ip == nil {
		return false
	}
	if localIP == nil {
		return ip.IsLoopback()
	}
	return ip.Equal(localIP)
}

// originAllowed says whether an Origin header value (possibly empty: a
// request a browser made same-origin, or not a browser) may reach the API.
func (h *handler) originAllowed(r *http.Request, origin string) bool {
	if origin == "" {
		return true
	}
	o := strings.ToLower(origin)
	host := strings.ToLower(r.Host)
	if o == "http://"+host || o == "https://"+host {
		return true
	}
	for _, a := range h.o.Origins {
		if strings.ToLower(strings.TrimSuffix(a, "/")) == o {
			return true
		}
	}
	return false
}

// deadline sets a read or write deadline on w's connection when the server
// supports it (an embedder's ResponseWriter may not).
func (h *handler) deadline(w http.ResponseWriter, write bool, d time.Duration) {
	rc := http.NewResponseController(w)
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	var err error
	if write {
		err = rc.SetWriteDeadline(t)
	} else {
		err = rc.SetReadDeadline(t)
	}
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		h.log.Debug("httpapi: set deadline", "err", err)
	}
}

func (h *handler) writeJSON(w http.ResponseWriter, code int, v any) {
	h.deadline(w, true, h.o.WriteTimeout)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := jsondoc.Encode(w, v, false); err != nil {
		h.log.Debug("httpapi: write response", "err", err)
	}
}

func (h *handler) error(w http.ResponseWriter, code int, msg string) {
	h.writeJSON(w, code, map[string]string{"error": msg})
}
