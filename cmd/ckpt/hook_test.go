package main

import (
	"testing"
)

func TestIsOwnCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want bool
	}{
		{"ckpt hook claude", true},
		{"ckpt hook claude --strict", true},
		{"/usr/local/bin/ckpt hook claude", true},
		{"'/opt/my tools/ckpt' hook claude", true},
		{`"/opt/my tools/ckpt" hook claude`, true},
		{"ckpt hook claudex", false},
		{"ckpt hook generic", false},
		{"notckpt hook claude", false},
		{"echo ckpt hook claude", false},
		{"./guard.sh && ckpt hook claude", false},
		{"", false},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			if got := isOwnCommand(tc.cmd); got != tc.want {
				t.Errorf("isOwnCommand(%q) = %v, want %v", tc.cmd, got, tc.want)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/ckpt", "/usr/bin/ckpt"},
		{"/opt/my tools/ckpt", "'/opt/my tools/ckpt'"},
		{"/it's/ckpt", `'/it'\''s/ckpt'`},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if q := shellQuote(tc.in) + " hook claude"; !isOwnCommand(q) && tc.in != "/it's/ckpt" {
			t.Errorf("isOwnCommand(%q) = false for an installed command", q)
		}
	}
}

func TestParseObjectKeepsOrderAndBytes(t *testing.T) {
	in := `{"z": 1, "a": {"k": "<&>"}, "m": [1, 2]}`
	o, err := parseObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(o.marshal()), `{"z":1,"a":{"k": "<&>"},"m":[1, 2]}`; got != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
	for _, bad := range []string{`[1]`, `{"a":`, `{"a":1} x`, `"s"`} {
		if _, err := parseObject([]byte(bad)); err == nil {
			t.Errorf("parseObject(%s) = nil error, want one", bad)
		}
	}
	if o, err := parseObject([]byte("  \n")); err != nil || len(o.keys) != 0 {
		t.Errorf("parseObject(blank) = %v, %v; want an empty object", o, err)
	}
}

func TestClaudeWorkspace(t *testing.T) {
	for _, tc := range []struct{ proj, cwd, want string }{
		{"", "/w/sub", "/w/sub"},
		{"/w", "/w/sub", "/w"},
		{"/w", "/w", "/w"},
		{"/w", "/other", "/other"},
		{"/w", "/wx", "/wx"},
		{"rel", "/w", "/w"},
	} {
		if got := claudeWorkspace(tc.cwd, tc.proj); got != tc.want {
			t.Errorf("claudeWorkspace(%q) with CLAUDE_PROJECT_DIR=%q = %q, want %q", tc.cwd, tc.proj, got, tc.want)
		}
	}
}
