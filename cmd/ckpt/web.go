package main

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// webFiles is the browser front-end of `ckpt serve`: plain HTML, CSS and
// JavaScript, no build step. It holds no rewind logic; it calls the JSON API.
//
//go:embed web
var webFiles embed.FS

// withWeb serves the embedded page and its static files without auth (the
// page holds no session data; it reads the token from the URL fragment and
// sends it on every API call) and hands every /api/ path to api.
func withWeb(api http.Handler) http.Handler {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" ||
			(r.Method != http.MethodGet && r.Method != http.MethodHead) {
			api.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'")
		files.ServeHTTP(w, r)
	})
}
