package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/internal/paths"
)

// Cline: one executable per hook, named after it, in .clinerules/hooks/
// (~/Documents/Cline/Hooks/ with --user). Every event has hookName,
// taskId and workspaceRoots; PreToolUse has preToolUse.toolName and
// .parameters (write_to_file and replace_in_file with path; apply_patch
// with the patch; execute_command and run_commands for the shell),
// UserPromptSubmit has userPromptSubmit.prompt. Cline reads a JSON answer
// on stdout: {"cancel": false} lets it go on.
//
// The Cline CLI (3.x) runs the same files but names its events its own
// way: tool_call (with preToolUse as above), prompt_submit, agent_start
// (TaskStart's file), agent_resume (TaskResume's), and more. It sends no
// prompt_submit for the prompt that starts a run, so agent_start, which
// it sends as each prompt's run starts, opens the turn, labelled
// clineRunLabel since it carries no prompt text; the prompt is then read
// from the CLI's session files (clinePrompt): the session's first prompt
// at once, a later one at the run's first tool call that writes, once the
// CLI has saved it. It runs agent_start without waiting for it: the turn
// is open before the run's first tool call because the model takes
// longer to answer than the hook to run.
// TaskComplete (the CLI's agent_end) starts a background sync when the
// store has a remote.
func init() {
	registerSpec(&spec{
		name:    "cline",
		title:   "Cline",
		decode:  decodeCline,
		reply:   clineReply,
		install: installCline,
		user:    clineUser,
		markers: Markers{
			Workspace: []string{".clinerules", ".cline"},
			Bins:      []string{"cline"},
			Home:      []string{".cline", "Documents/Cline"},
			Writes:    ".clinerules/hooks/UserPromptSubmit, PreToolUse, TaskStart, TaskResume and TaskComplete",
			Config:    []string{".clinerules/hooks/UserPromptSubmit"},
			Subdir:    "git",
			Probe:     `{"taskId":"ckpt-check","workspaceRoots":["@WORK@"],"hookName":"UserPromptSubmit","userPromptSubmit":{"prompt":"ckpt install --check"}}`,
		},
	})
}

type clineEvent struct {
	HookName       string   `json:"hookName"`
	TaskID         string   `json:"taskId"`
	WorkspaceRoots []string `json:"workspaceRoots"`
	PreToolUse     struct {
		ToolName   string          `json:"toolName"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"preToolUse"`
	UserPromptSubmit struct {
		Prompt *string `json:"prompt"`
	} `json:"userPromptSubmit"`
	// The CLI's: its session (whose files hold the prompts) and the id
	// of a tool_call's call.
	SessionContext struct {
		RootSessionID string `json:"rootSessionId"`
	} `json:"sessionContext"`
	ToolCall struct {
		ID string `json:"id"`
	} `json:"tool_call"`
}

// clineRunLabel labels the turn a Cline CLI run opens (agent_start), whose
// events carry no prompt text, until the prompt is found (clinePrompt).
const clineRunLabel = "(Cline run started: its hooks do not send the prompt)"

func decodeCline(data []byte) (Plan, *Failure) {
	var ev clineEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	n := normEvent{session: ev.TaskID, tool: ev.PreToolUse.ToolName}
	if len(ev.WorkspaceRoots) > 0 {
		n.cwd = ev.WorkspaceRoots[0]
		switch ev.HookName {
		case "prompt_submit", "tool_call", "agent_start", "agent_resume":
			n.cwd = clineCwd(n.cwd) // the CLI's: it runs hooks where it runs
		}
	}
	switch ev.HookName {
	case "UserPromptSubmit", "prompt_submit":
		if ev.UserPromptSubmit.Prompt == nil {
			return Plan{}, &Failure{Msg: ev.HookName + " event has no userPromptSubmit.prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.UserPromptSubmit.Prompt
	case "PreToolUse", "tool_call":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.PreToolUse.ToolName, objectArgs(ev.PreToolUse.Parameters))
		if root, call := ev.SessionContext.RootSessionID, ev.ToolCall.ID; root != "" && call != "" {
			plan, f := n.plan("cline")
			plan.LabelFrom, plan.Label = clineRunLabel, func() string { return clinePrompt(root, call) }
			return plan, f
		}
	case "agent_start", "agent_resume":
		n.kind, n.prompt = "prompt", clineRunLabel
		if root := ev.SessionContext.RootSessionID; root != "" && ev.HookName == "agent_start" {
			plan, f := n.plan("cline")
			plan.LabelFrom, plan.Label = clineRunLabel, func() string { return clinePrompt(root, "") }
			return plan, f
		}
	case "TaskComplete", "agent_end":
		return syncPlan()
	case "TaskStart", "TaskResume", "TaskCancel", "TaskError", "PostToolUse", "PreCompact", "SessionShutdown",
		"agent_abort", "agent_error", "tool_result", "pre_compact", "session_shutdown":
		return Plan{None: true}, nil
	default:
		return Plan{}, unknownEvent(ev.HookName)
	}
	return n.plan("cline")
}

// clineCwd is the directory a Cline CLI event's relative paths start
// from: the hook's own working directory, which is the CLI's, when it is
// inside root, the workspace root the event names (the CLI started in a
// subdirectory of a git repository names the repository's root, yet
// writes a relative path below where it started); else root.
func clineCwd(root string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(root) || !paths.Within(root, wd) {
		return root
	}
	return wd
}

// clineSessionsDir is where the Cline CLI keeps its sessions:
// $CLINE_SESSION_DATA_DIR, else $CLINE_DATA_DIR/sessions, else
// ($CLINE_DIR, else ~/.cline)/data/sessions.
func clineSessionsDir() (string, error) {
	if d := strings.TrimSpace(os.Getenv("CLINE_SESSION_DATA_DIR")); d != "" {
		return d, nil
	}
	if d := strings.TrimSpace(os.Getenv("CLINE_DATA_DIR")); d != "" {
		return filepath.Join(d, "sessions"), nil
	}
	if d := strings.TrimSpace(os.Getenv("CLINE_DIR")); d != "" {
		return filepath.Join(d, "data", "sessions"), nil
	}
	return userPath(".cline", "data", "sessions")
}

// clinePrompt is the prompt of a run of the Cline CLI session root, from
// the session's files: with call, the user's last prompt before the
// model's message that made that tool call; without, the session's first
// prompt, while its messages hold none yet (the first run's start). It is
// "" when the files do not show it (yet).
func clinePrompt(root, call string) string {
	dir, err := clineSessionsDir()
	if err != nil || root != filepath.Base(root) || root == "." || root == ".." {
		return ""
	}
	var session struct {
		Prompt       string `json:"prompt"`
		MessagesPath string `json:"messages_path"`
	}
	data, err := os.ReadFile(filepath.Join(dir, root, root+".json"))
	if err != nil || json.Unmarshal(data, &session) != nil {
		return ""
	}
	path := filepath.Join(dir, root, root+".messages.json")
	if filepath.IsAbs(session.MessagesPath) {
		path = session.MessagesPath
	}
	var msgs struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if data, err = os.ReadFile(path); err != nil || json.Unmarshal(data, &msgs) != nil {
		return ""
	}
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
	}
	prompt, prompts := "", 0
	for _, m := range msgs.Messages {
		var blocks []block
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			blocks = []block{{Type: "text", Text: text}}
		} else if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch {
			case m.Role == "user" && b.Type == "text" && strings.HasPrefix(b.Text, "<user_input"):
				prompt, prompts = clineUserInput(b.Text), prompts+1
			case m.Role == "assistant" && b.Type == "tool_use" && call != "" && b.ID == call:
				return prompt
			}
		}
	}
	if call == "" && prompts == 0 && strings.HasPrefix(session.Prompt, "<user_input") {
		return clineUserInput(session.Prompt)
	}
	return ""
}

// clineUserInput is the prompt the Cline CLI wrapped as
// <user_input mode="...">PROMPT</user_input>.
func clineUserInput(s string) string {
	if i := strings.IndexByte(s, '>'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "</user_input>"))
}

func installCline(e *Env, install bool) error {
	ws := e.Workspace
	dir := filepath.Join(ws, ".clinerules", "hooks")
	if e.User {
		p, err := clineUser()
		if err != nil {
			return err
		}
		dir = filepath.Dir(p)
	}
	script := []byte("#!/bin/sh\n# " + ownFileMark + " (ckpt uninstall cline removes it)\nexec " + e.agentCommand("cline") + "\n")
	return installFiles(e, dir, []ownFile{
		{path: filepath.Join(dir, "UserPromptSubmit"), content: script, mode: 0o755},
		{path: filepath.Join(dir, "PreToolUse"), content: script, mode: 0o755},
		// The Cline CLI's agent_start and agent_resume: a turn per run.
		{path: filepath.Join(dir, "TaskStart"), content: script, mode: 0o755},
		{path: filepath.Join(dir, "TaskResume"), content: script, mode: 0o755},
		// The task is done (the Cline CLI's agent_end): a background sync.
		{path: filepath.Join(dir, "TaskComplete"), content: script, mode: 0o755},
	}, install)
}

// clineReply lets Cline go on, or (--strict, a capture failed) cancels
// the tool call with the reason.
func clineReply(_ string, blocked *Failure) string {
	if blocked == nil {
		return `{"cancel": false}` + "\n"
	}
	b, _ := marshalNoEscape(struct {
		Cancel       bool   `json:"cancel"`
		ErrorMessage string `json:"errorMessage"`
	}{true, "ckpt: " + blocked.Msg})
	return string(b) + "\n"
}

// clineUser is the hook script a --user install writes for the prompt
// (beside the others, in ~/Documents/Cline/Hooks).
func clineUser() (string, error) { return userPath("Documents", "Cline", "Hooks", "UserPromptSubmit") }
