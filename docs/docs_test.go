package docs

import (
	"strings"
	"testing"
)

// TestParse: a page's parts, and its fenced blocks as a terminal shows
// them (indented by two spaces, without fences).
func TestParse(t *testing.T) {
	p, err := parse("# ckpt sessions rm\n\nRemove a session\n\n```\nckpt sessions rm ID\n```\n\nRemove it:\n\n```\nckpt sessions rm abc\n```\n\nThen gc.\n\n## Flags\n\n- `--force`: remove it anyway\n- `--dry-run`: say what\n")
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != "sessions rm" || p.Short != "Remove a session" || p.Usage != "ckpt sessions rm ID" {
		t.Errorf("path %q, short %q, usage %q", p.Path, p.Short, p.Usage)
	}
	if want := "Remove it:\n\n  ckpt sessions rm abc\n\nThen gc."; p.Long != want {
		t.Errorf("long %q, want %q", p.Long, want)
	}
	if len(p.Flags) != 2 || p.Flags["force"] != "remove it anyway" || p.Flags["dry-run"] != "say what" {
		t.Errorf("flags %v", p.Flags)
	}
	topic, err := parse("# ckpt by-hand\n\nUsing ckpt by hand\n\nText.\n")
	if err != nil || topic.Path != "by-hand" || topic.Usage != "" || topic.Long != "Text." {
		t.Errorf("topic %+v, %v", topic, err)
	}
	for _, bad := range []string{
		"ckpt rewind\n\nShort\n",                          // no title
		"# ckpt rewind\n\n",                               // no description
		"# ckpt rewind\n\nShort\n\n```\nckpt rewind\n",    // usage block not closed
		"# ckpt rewind\n\nShort\n\n## Flags\n\n--scope\n", // flag line
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) took it", bad)
		}
	}
}

// TestPages: every embedded page parses, under the file its title names.
func TestPages(t *testing.T) {
	pages, err := Pages()
	if err != nil {
		t.Fatal(err)
	}
	for path, p := range pages {
		if p.Usage != "" && !strings.HasPrefix(p.Usage, strings.TrimSpace("ckpt "+path)) {
			t.Errorf("%s: usage %q is not of ckpt %s", PageFile(path), p.Usage, path)
		}
	}
	if _, ok := pages["rewind"]; !ok {
		t.Error("no page for rewind")
	}
}
