package agent

import (
	"encoding/json"
	"path/filepath"
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
// clineRunLabel since it carries no prompt text. It runs agent_start
// without waiting for it: the turn is open before the run's first tool
// call because the model takes longer to answer than the hook to run.
// TaskComplete (the CLI's agent_end) starts a background sync when the
// store has a remote.
func init() {
	registerSpec(&spec{
		name:    "cline",
		title:   "Cline",
		decode:  decodeCline,
		reply:   clineReply,
		install: installCline,
		markers: Markers{
			Workspace: []string{".clinerules", ".cline"},
			Bins:      []string{"cline"},
			Home:      []string{".cline", "Documents/Cline"},
			Writes:    ".clinerules/hooks/UserPromptSubmit, PreToolUse, TaskStart, TaskResume and TaskComplete",
			Config:    []string{".clinerules/hooks/UserPromptSubmit"},
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
}

// clineRunLabel labels the turn a Cline CLI run opens (agent_start), whose
// events carry no prompt text.
const clineRunLabel = "(Cline run started: its hooks do not send the prompt)"

func decodeCline(data []byte) (Plan, *Failure) {
	var ev clineEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	n := normEvent{session: ev.TaskID, tool: ev.PreToolUse.ToolName}
	if len(ev.WorkspaceRoots) > 0 {
		n.cwd = ev.WorkspaceRoots[0]
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
	case "agent_start", "agent_resume":
		n.kind, n.prompt = "prompt", clineRunLabel
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

func installCline(e *Env, install bool) error {
	ws := e.Workspace
	dir := filepath.Join(ws, ".clinerules", "hooks")
	if e.User {
		p, err := userPath("Documents", "Cline", "Hooks")
		if err != nil {
			return err
		}
		dir = p
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
