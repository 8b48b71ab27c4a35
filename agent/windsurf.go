package agent

import (
	"encoding/json"
	"path/filepath"
)

// Windsurf (Cascade hooks): .windsurf/hooks.json (~/.codeium/windsurf/
// hooks.json with --user), flat entries per action. Every event names its
// action (agent_action_name) and conversation (trajectory_id); tool_info
// holds the details: user_prompt, file_path, command_line and cwd.
// post_cascade_response (Cascade finished answering) starts a background
// sync when the store has a remote. Only
// the exit code matters (2 blocks), so nothing is printed.
func init() {
	registerSpec(&spec{
		name:    "windsurf",
		title:   "Windsurf",
		decode:  decodeWindsurf,
		install: installWindsurf,
		user:    windsurfUser,
		markers: Markers{
			Workspace: []string{".windsurf", ".windsurfrules"},
			Bins:      []string{"windsurf"},
			Home:      []string{".codeium/windsurf"},
			Writes:    ".windsurf/hooks.json",
			Config:    []string{".windsurf/hooks.json"},
			Probe:     `{"trajectory_id":"ckpt-check","execution_id":"e1","agent_action_name":"pre_user_prompt","tool_info":{"user_prompt":"ckpt install --check"}}`,
		},
	})
}

type windsurfEvent struct {
	Action       string `json:"agent_action_name"`
	TrajectoryID string `json:"trajectory_id"`
	ToolInfo     struct {
		UserPrompt  *string `json:"user_prompt"`
		FilePath    string  `json:"file_path"`
		CommandLine string  `json:"command_line"`
		Cwd         string  `json:"cwd"`
	} `json:"tool_info"`
}

func decodeWindsurf(data []byte) (Plan, *Failure) {
	var ev windsurfEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	// pre_write_code carries no directory: the hook runs in the
	// workspace, and the file's absolute path decides the rest.
	n := normEvent{session: ev.TrajectoryID, cwd: ev.ToolInfo.Cwd}
	if n.cwd == "" {
		n.cwd = processDir()
	}
	switch ev.Action {
	case "pre_user_prompt":
		if ev.ToolInfo.UserPrompt == nil {
			return Plan{}, &Failure{Msg: "pre_user_prompt event has no tool_info.user_prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.ToolInfo.UserPrompt
	case "pre_write_code":
		if ev.ToolInfo.FilePath == "" {
			return Plan{}, &Failure{Msg: "pre_write_code event has no tool_info.file_path; nothing recorded"}
		}
		n.kind, n.tool, n.paths = "tool", "write_code", []string{ev.ToolInfo.FilePath}
	case "pre_run_command":
		n.kind, n.tool, n.shell = "tool", "run_command", true
	case "post_cascade_response":
		return syncPlan()
	case "post_write_code", "post_run_command", "pre_read_code", "post_read_code", "pre_mcp_tool_use",
		"post_mcp_tool_use", "post_setup_worktree":
		return Plan{None: true}, nil
	default:
		return Plan{}, unknownEvent(ev.Action)
	}
	return n.plan("windsurf")
}

func installWindsurf(e *Env, install bool) error {
	ws := e.Workspace
	path := filepath.Join(ws, ".windsurf", "hooks.json")
	if e.User {
		p, err := windsurfUser()
		if err != nil {
			return err
		}
		path = p
	}
	entry := func(cmd string) any {
		return struct {
			Command    string `json:"command"`
			ShowOutput bool   `json:"show_output"`
		}{cmd, false}
	}
	return installFlat(e, path, []string{"pre_user_prompt", "pre_write_code", "pre_run_command", "post_cascade_response"},
		e.agentCommand("windsurf"), "command", entry, nil, ownAgentCommand("windsurf"), install)
}

// windsurfUser is the file a --user install writes.
func windsurfUser() (string, error) { return userPath(".codeium", "windsurf", "hooks.json") }
