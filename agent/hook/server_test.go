package hook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/token"
)

// TestHookServerConfigFile: a configuration an older ckpt wrote (one
// store-wide token, no key) is reported, and an install replaces it with
// a key and per-install tokens, the old token gone; a file other users
// can read, or a store directory they can write, is refused: its key is
// what proves the server.
func TestHookServerConfigFile(t *testing.T) {
	store := t.TempDir()
	path := filepath.Join(store, hookServerFile)
	old := `{"addr":"127.0.0.1:7291","token":"` + testToken + `"}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ServerConfig(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no hook server configured in") {
		t.Errorf("ServerConfig of a store without one: %v", err)
	}
	if _, ok, err := LoadConfig(store); ok || !errors.Is(err, ErrOldConfig) {
		t.Fatalf("older configuration: ok %v, err %v; want ErrOldConfig", ok, err)
	}
	cfg, tok, err := Configure(store, "127.0.0.1:20001", "/ws", false)
	if err != nil {
		t.Fatal(err)
	}
	if tok == testToken || token.Bits(cfg.Key) < 2*token.MinBits || len(cfg.Tokens) != 1 || cfg.Tokens[0].Root != "/ws" {
		t.Fatalf("after install over an older configuration: %+v (token %s)", cfg, tok)
	}
	if _, ok := cfg.scopeOf(testToken); ok {
		t.Error("the older token still works")
	}
	if _, ok, err := LoadConfig(store); !ok || err != nil {
		t.Fatalf("reading it back: %v %v", ok, err)
	}
	if got, err := ServerConfig(store); err != nil || got.Addr != "127.0.0.1:20001" {
		t.Errorf("ServerConfig: %+v %v", got, err)
	}
	os.Chmod(path, 0o644)
	if _, _, err := LoadConfig(store); err == nil || !strings.Contains(err.Error(), "other users can read it") {
		t.Errorf("a configuration others can read: %v", err)
	}
	os.Chmod(path, 0o600)
	os.Chmod(store, 0o777)
	defer os.Chmod(store, 0o700)
	if _, _, err := LoadConfig(store); err == nil || !strings.Contains(err.Error(), "other users can write the store") {
		t.Errorf("a store others can write: %v", err)
	}
}

// testToken is a token of the least strength a server takes.
const testToken = "0123456789abcdef0123456789abcdef"

// TestServerWarning: when Claude Code's settings send tool calls to the
// store's hook server and nothing listens there, the warning says edits
// are not captured; with no such settings there is none.
func TestServerWarning(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	store, project := t.TempDir(), t.TempDir()
	if w := ServerWarning(store, project); w != "" {
		t.Errorf("no http hooks: %q", w)
	}
	addr, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Configure(store, addr, project, false); err != nil {
		t.Fatal(err)
	}
	settings := `{"hooks":{"PreToolUse":[{"hooks":[{"type":"http","url":"http://` + addr + `/hook/claude"}]}]}}`
	if err := os.MkdirAll(filepath.Join(project, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".claude", "settings.local.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := ServerWarning(store, project); !strings.HasSuffix(w, "which is not running: edits are not captured (ckpt serve --hooks, or the next prompt starts it)") {
		t.Errorf("server down: %q", w)
	}
}
