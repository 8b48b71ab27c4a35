package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/quote"
)

// transcriptLine is one entry of a Claude Code transcript as the tests
// write them: the fields ckpt reads.
func transcriptLine(typ, uuid, promptID, text string) string {
	e := map[string]any{"type": typ, "uuid": uuid, "isSidechain": false, "message": map[string]any{"role": typ, "content": text}}
	if promptID != "" {
		e["promptId"] = promptID
	}
	b, _ := json.Marshal(e)
	return string(b) + "\n"
}

func TestAgentPath(t *testing.T) {
	for _, tc := range []struct {
		in      string
		windows bool
		want    string
		abs     bool
	}{
		{`C:\proj\x.go`, true, `C:\proj\x.go`, true},
		{`C:/proj/x.go`, true, `C:\proj\x.go`, true},
		{`/c/proj/x.go`, true, `C:\proj\x.go`, true},
		{`/d`, true, `D:\`, true},
		{`\\server\share\x.go`, true, `\\server\share\x.go`, true},
		{`src\x.go`, true, `src\x.go`, false},
		{`src/x.go`, true, `src\x.go`, false},
		{`/proj/x.go`, true, `\proj\x.go`, false},
		{`/proj/x.go`, false, `/proj/x.go`, true},
		{`C:\proj\x.go`, false, `C:\proj\x.go`, false},
		{`src/x.go`, false, `src/x.go`, false},
	} {
		got, abs := agentPath(tc.in, tc.windows)
		if got != tc.want || abs != tc.abs {
			t.Errorf("agentPath(%q, windows=%v) = %q, %v; want %q, %v", tc.in, tc.windows, got, abs, tc.want, tc.abs)
		}
	}
}

// TestDecodeHookClaudeCurrent feeds decodeHook the shapes Claude Code sends
// now (https://code.claude.com/docs/en/hooks): PowerShell as a shell, Edit
// and the older MultiEdit, subagent fields, prompt_id, SessionStart sources.
func TestDecodeHookClaudeCurrent(t *testing.T) {
	const base = `"session_id":"s1","transcript_path":"/t/s1.jsonl","cwd":"/w"`
	for _, tc := range []struct {
		name, json string
		paths      []string
		shell      bool
		start      bool
		none       bool
	}{
		{"powershell", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"PowerShell","tool_input":{"command":"Remove-Item x.txt"}}`, nil, true, false, false},
		{"bash", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm x"}}`, nil, true, false, false},
		{"edit", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"/w/a.go","old_string":"a","new_string":"b"}}`, []string{"/w/a.go"}, false, false, false},
		{"multiedit from an older version", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"MultiEdit","tool_input":{"file_path":"/w/b.go","edits":[]}}`, []string{"/w/b.go"}, false, false, false},
		{"subagent write", `{` + base + `,"hook_event_name":"PreToolUse","agent_id":"ag-1","agent_type":"Explore","prompt_id":"p1","tool_name":"Write","tool_input":{"file_path":"c.go","content":""}}`, []string{"c.go"}, false, false, false},
		{"read", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/a.go"}}`, nil, false, false, true},
		{"startup", `{` + base + `,"hook_event_name":"SessionStart","source":"startup"}`, nil, false, true, false},
		{"resume", `{` + base + `,"hook_event_name":"SessionStart","source":"resume"}`, nil, false, true, false},
		{"fork", `{` + base + `,"hook_event_name":"SessionStart","source":"fork"}`, nil, false, true, false},
		{"clear", `{` + base + `,"hook_event_name":"SessionStart","source":"clear"}`, nil, false, false, true},
		{"compact", `{` + base + `,"hook_event_name":"SessionStart","source":"compact"}`, nil, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, f := decodeHook([]byte(tc.json), "claude")
			if f != nil {
				t.Fatalf("failure %q", f.Msg)
			}
			if strings.Join(plan.Paths, ",") != strings.Join(tc.paths, ",") || plan.Shell != tc.shell || plan.Start != tc.start || plan.None != tc.none {
				t.Errorf("plan paths %q shell %v start %v none %v; want %q %v %v %v", plan.Paths, plan.Shell, plan.Start, plan.None, tc.paths, tc.shell, tc.start, tc.none)
			}
		})
	}
	plan, _ := decodeHook([]byte(`{`+base+`,"hook_event_name":"UserPromptSubmit","prompt_id":"p-9","prompt":"hi"}`), "claude")
	if plan.Event.PromptID != "p-9" {
		t.Errorf("prompt_id = %q, want p-9", plan.Event.PromptID)
	}
}

func TestLastAssistantIn(t *testing.T) {
	tr := transcriptLine("user", "u1", "p-1", "one") +
		transcriptLine("assistant", "a1", "", "x") +
		`{"type":"assistant","uuid":"side","isSidechain":true}` + "\n" +
		"not json\n" +
		transcriptLine("user", "u2", "p-2", "two") +
		`{"type":"user","uuid":"u2r","promptId":"p-2","message":{"content":[{"type":"tool_result","content":"ok"}]}}` + "\n" +
		transcriptLine("assistant", "a2", "", "y")
	// A 2.1.330 fork: every copied user entry has the new promptId.
	fork := transcriptLine("user", "u1", "p-9", "one") + transcriptLine("assistant", "a1", "", "x") +
		`{"type":"user","uuid":"u9","promptId":"p-9","message":{"content":[{"type":"text","text":"again"}]}}` + "\n"
	for _, tc := range []struct {
		tr     string
		prompt *transcriptPrompt
		want   string
		found  bool
	}{
		{tr, nil, "a2", true},
		{tr, &transcriptPrompt{ID: "p-1", Text: "one"}, "", true},
		{tr, &transcriptPrompt{ID: "p-2", Text: "two"}, "a1", true},
		{tr, &transcriptPrompt{ID: "p-3", Text: "three"}, "", false},
		{tr, &transcriptPrompt{ID: "p-2", Text: "other text"}, "", false},
		{fork, &transcriptPrompt{ID: "p-9", Text: "again"}, "a1", true},
	} {
		got, found, err := lastAssistantIn(strings.NewReader(tc.tr), tc.prompt)
		if err != nil || got != tc.want || found != tc.found {
			t.Errorf("lastAssistantIn(%+v) = %q, %v, %v; want %q, %v", tc.prompt, got, found, err, tc.want, tc.found)
		}
	}
}

func TestDecodeHookWindowsPaths(t *testing.T) {
	defer func(w bool) { onWindows = w }(onWindows)
	onWindows = true
	plan, f := decodeHook([]byte(`{"session_id":"s1","cwd":"C:\\proj","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"C:/proj/src/x.go"}}`), "claude")
	if f != nil {
		t.Fatal(f.Msg)
	}
	if plan.Event.Cwd != `C:\proj` || strings.Join(plan.Paths, ",") != `C:\proj\src\x.go` {
		t.Errorf("cwd %q paths %q", plan.Event.Cwd, plan.Paths)
	}
	// PowerShell only (no Bash tool on Windows): a shell.
	plan, f = decodeHook([]byte(`{"session_id":"s1","cwd":"/c/proj","hook_event_name":"PreToolUse","tool_name":"PowerShell","tool_input":{"command":"del x.go"}}`), "claude")
	if f != nil || !plan.Shell || plan.Event.Cwd != `C:\proj` {
		t.Errorf("PowerShell: %+v %v", plan, f)
	}
	if _, f := decodeHook([]byte(`{"session_id":"s1","cwd":"proj","hook_event_name":"UserPromptSubmit","prompt":"x"}`), "claude"); f == nil {
		t.Error("a relative cwd was accepted")
	}
}

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
		if got := quote.Shell(tc.in); got != tc.want {
			t.Errorf("quote.Shell(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if q := quote.Shell(tc.in) + " hook claude"; !isOwnCommand(q) && tc.in != "/it's/ckpt" {
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

func TestIsOwnHookURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:7291/hook/claude", true},
		{"http://127.0.0.1:7291/hook/claude?strict=1", true},
		{"http://localhost:9/hook/claude", true},
		{"http://[::1]:9/hook/claude", true},
		{"http://example.com:9/hook/claude", false},
		{"https://127.0.0.1:9/hook/claude", false},
		{"http://127.0.0.1:9/hook/generic", false},
		{"http://127.0.0.1:9/other/hook/claude", false},
		{"http://127.0.0.1/hook/claude", false},
	} {
		if got := isOwnHookURL(tc.url); got != tc.want {
			t.Errorf("isOwnHookURL(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}
