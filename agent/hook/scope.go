package hook

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/internal/quote"
)

// outOfScope refuses an HTTP hook event for dir, which tok does not cover.
func outOfScope(dir string, tok *Token) *agent.Failure {
	what := "inside " + quote.Path(tok.Root)
	if tok.User {
		what = "a directory below " + quote.Path(tok.Root) + " (not it, nor its hidden directories)"
	}
	return &agent.Failure{Msg: fmt.Sprintf("workspace %s is not %s, which this hook token was installed for; nothing recorded", quote.Path(dir), what), Refused: true}
}

// claudeTranscriptOf says whether path is where Claude Code keeps the
// transcripts of a project tok covers: $CLAUDE_CONFIG_DIR (else
// ~/.claude)/projects/NAME/....jsonl, NAME being Claude's name for cwd or
// one of its parents that tok covers (every character other than a
// letter or a digit made '-'; a long one cut at 200 and given a suffix).
// The hook server reads no other transcript_path (only Claude Code's
// events carry one): a token of one workspace does not make it read a
// file elsewhere. root is cwd's workspace root (controller.WorkspaceRoot),
// which the caller has resolved already.
func claudeTranscriptOf(path, cwd, root string, tok Token) bool {
	conf := os.Getenv("CLAUDE_CONFIG_DIR")
	if conf == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		conf = filepath.Join(home, ".claude")
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || !strings.HasSuffix(path, ".jsonl") {
		return false
	}
	rel, err := filepath.Rel(filepath.Join(conf, "projects"), path)
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	name, rest, _ := strings.Cut(filepath.ToSlash(rel), "/")
	if rest == "" {
		return false
	}
	for _, d := range []string{root, filepath.Clean(cwd)} {
		for ; tok.Covers(d); d = filepath.Dir(d) {
			enc := claudeProjectName(d)
			if name == enc || (len(enc) > 200 && strings.HasPrefix(name, enc[:200]+"-")) {
				return true
			}
		}
	}
	return false
}

// claudeProjectName is the name Claude Code gives a project directory's
// folder under projects/ (before cutting a long one).
func claudeProjectName(dir string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, dir)
}
