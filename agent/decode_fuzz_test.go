package agent

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// FuzzDecodeHook feeds arbitrary bytes to the hook's event decoder, as
// Claude and as the generic protocol. It must never panic; a failure is one
// line; an accepted event is one the hook may act on (a valid session id, an
// absolute cwd, a prompt or something to capture or a shell command, or a
// session start); and
// the generic protocol captures at least the paths Claude's does.
// Seeds: testdata/fuzz/FuzzDecodeHook.
func FuzzDecodeHook(f *testing.F) {
	f.Add([]byte(`{"session_id":"s1","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/w/a.go"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		plans := map[string]Plan{}
		for _, agent := range []string{"claude", "generic"} {
			plan, fail := decodeHook(data, agent)
			if fail != nil {
				if plan.None || fail.Msg == "" || strings.ContainsAny(fail.Msg, "\r\n") {
					t.Fatalf("%s: failure %q (plan %+v): want one non-empty line and no plan", agent, fail.Msg, plan)
				}
				if fail.Block {
					t.Fatalf("%s: decoding blocks a tool call: %q", agent, fail.Msg)
				}
				continue
			}
			if plan.None {
				if len(plan.Paths) > 0 || plan.Shell {
					t.Fatalf("%s: nothing to do, yet %+v", agent, plan)
				}
				continue
			}
			ev := plan.Event
			if !controller.ValidSession(ev.SessionID) || !filepath.IsAbs(ev.Cwd) {
				t.Fatalf("%s: accepted session %q cwd %q", agent, ev.SessionID, ev.Cwd)
			}
			if plan.Start != (ev.HookEventName == "SessionStart") {
				t.Fatalf("%s: start %v for %q", agent, plan.Start, ev.HookEventName)
			}
			switch ev.HookEventName {
			case "SessionStart":
				if len(plan.Paths) > 0 || plan.Shell {
					t.Fatalf("%s: session start planned %+v", agent, plan)
				}
			case "UserPromptSubmit":
				if ev.Prompt == nil || len(plan.Paths) > 0 || plan.Shell {
					t.Fatalf("%s: prompt event planned %+v", agent, plan)
				}
			case "PreToolUse":
				if len(plan.Paths) == 0 && !plan.Shell {
					t.Fatalf("%s: tool event with nothing to do not marked none: %+v", agent, plan)
				}
				if plan.Shell && len(plan.Paths) > 0 {
					t.Fatalf("%s: both a shell command and paths: %+v", agent, plan)
				}
				for _, p := range plan.Paths {
					if p == "" {
						t.Fatalf("%s: empty path in %+v", agent, plan)
					}
				}
			default:
				t.Fatalf("%s: accepted event %q", agent, ev.HookEventName)
			}
			plans[agent] = plan
		}
		c, ok := plans["claude"]
		if !ok {
			return
		}
		g, ok := plans["generic"]
		if !ok {
			t.Fatalf("claude accepted %q, generic did not", data)
		}
		for _, p := range c.Paths {
			if !slices.Contains(g.Paths, p) {
				t.Fatalf("claude captures %q, generic only %q", p, g.Paths)
			}
		}
	})
}
