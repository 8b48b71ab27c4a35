package setup

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/agent"
)

// TestReportText: the report for people lists the agents found, each
// file's entries and how it ended up (or that nothing changed), the
// directories removed and the scan mode put back; a probe says whether
// its hook fires.
func TestReportText(t *testing.T) {
	sep := string(filepath.Separator)
	r := &Report{
		Found: []agent.Found{{Agent: "claude", Found: []string{"$PATH", "~/.claude"}}, {Agent: "codex", Found: []string{"$PATH"}}},
		Files: []File{
			{Settings: "/w/.claude/settings.json", Added: []string{"hooks.Stop"}, Install: true, Then: "updated", Note: "scan mode on for /w"},
			{Settings: "/w/.codex/hooks.json", Install: true},
			{Settings: "/w/.pi/x.ts", Removed: []string{"x.ts"}, Then: "removed"},
			{Settings: "/w/.gemini/settings.json"},
		},
		RemovedDirs:  []string{"/w/.pi"},
		ScanRestored: "unset",
		Workspace:    "/w",
	}
	var b bytes.Buffer
	r.WriteText(&b)
	want := "found claude ($PATH, ~/.claude), codex ($PATH)\n" +
		"added hooks.Stop\nupdated /w/.claude/settings.json\nscan mode on for /w\n" +
		"ckpt hooks already installed in /w/.codex/hooks.json; nothing changed\n" +
		"removed x.ts\nremoved /w/.pi/x.ts\n" +
		"no ckpt hooks in /w/.gemini/settings.json; nothing changed\n" +
		"removed /w/.pi" + sep + "\n" +
		"scan mode for /w back as before install (not set: off unless a session turns it on)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	Probe{Agent: "pi", Command: "pi -e x", User: true, Fires: true, Note: "trust the project"}.WriteText(&b)
	Probe{Agent: "codex", Command: "ckpt hook codex", Error: "exit 1"}.WriteText(&b)
	if want := "pi (--user): fires: pi -e x\npi (--user): note: trust the project\ncodex: does not fire: ckpt hook codex: exit 1\n"; b.String() != want {
		t.Errorf("probes: got\n%s\nwant\n%s", b.String(), want)
	}
}
