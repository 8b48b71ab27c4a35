package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/hook"
	"github.com/spf13/cobra"
)

type hookOptions struct {
	ag     agent.Agent
	strict bool
	// startServer makes sure the resident hook server (`ckpt serve
	// --hooks`) runs, proven, before the event is handled: what `ckpt
	// install claude --http` installs on the prompt and session-start
	// events.
	startServer bool
	// projectDir is Claude Code's project directory ($CLAUDE_PROJECT_DIR
	// of the hook process; "" over HTTP, where the session's workspace
	// decides).
	projectDir string
	// scanTurn makes a prompt's turn record the whole workspace, as scan
	// mode does: the hook server its tool calls post to is not proven to
	// be running (ensureHookServer).
	scanTurn bool
}

func newHookCmd(a *app) *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:   "hook claude|generic|AGENT",
		Short: "Handle one agent hook event (JSON on stdin); what `ckpt install AGENT` wires up",
		Long: `Read one agent hook event as JSON on stdin and record it. For claude (and
generic, the same JSON from any agent):

  UserPromptSubmit  open a turn labelled with "prompt" (its user message);
                    for claude, record its prompt_id and where it begins in
                    the transcript (read only), for "ckpt rewind"
  PreToolUse        Write, Edit, MultiEdit: capture tool_input.file_path;
                    NotebookEdit: capture tool_input.notebook_path;
                    Bash, PowerShell: in scan mode, make sure the turn has a
                    manifest
  SessionStart      startup/resume: in scan mode, a session with no
                    workspace manifest yet opens a turn that records one
                    (a resume checkpoint); fork: a new session continuing a
                    ckpt-recorded Claude conversation becomes a ckpt fork
  Stop, SessionEnd  when the store has a remote, start "ckpt sync" in the
                    background (one at a time; output in STORE/sync.log)
  PostToolUse and other known events: accepted, nothing to do

Events from a subagent (agent_id set) carry the parent's session_id and
land in its open turn.

The session is the event's session_id and the workspace its cwd (for
claude, $CLAUDE_PROJECT_DIR when cwd is inside it); --store or $CKPT_HOME
still chooses the store. Nothing is printed on stdout, except (claude
--start-server) a "systemMessage" for Claude Code to show when its tool
calls will not reach a proven hook server.

Other agents (codex, cursor, cline, copilot, gemini, opencode, pi,
windsurf, qwen, kilo, amp) send their own events; "ckpt install AGENT" wires them up and
docs/agents/ says what each captures. For gemini, cursor
and cline the hook prints the JSON answer the agent expects on stdout.
Their end events start the same background sync as Stop: codex Stop;
gemini AfterAgent, SessionEnd; cursor stop, sessionEnd; copilot
agentStop, sessionEnd; cline TaskComplete (agent_end); windsurf
post_cascade_response; opencode and kilo the plugin's session.idle; pi
the extension's Stop (pi's agent_settled); qwen Stop, SessionEnd; amp
the plugin's agent.end.

"generic" takes the same JSON from any agent; it captures
tool_input.file_path or notebook_path of every PreToolUse, whatever the
tool_name, and treats tool_name Bash, PowerShell or shell as a shell
command.

A problem never stops the agent: one line on stderr and exit 0. With
--strict a PreToolUse whose capture fails blocks the tool call (exit 2,
the reason on stderr). Paths outside the workspace or inside .git are
skipped with a warning even with --strict. Malformed JSON and unknown
events are reported on stderr and record nothing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("hook takes the agent: %s or generic (see ckpt hook --help)", strings.Join(agent.Names(), ", "))
			}
			if _, ok := agent.Lookup(args[0]); !ok {
				return usagef("hook takes the agent: %s or generic (see ckpt hook --help)", strings.Join(agent.Names(), ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ag, _ = agent.Lookup(args[0])
			return a.runHook(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.strict, "strict", false, "block the tool call (exit 2) when its capture fails")
	cmd.Flags().BoolVar(&o.startServer, "start-server", false, "first make sure the resident hook server (ckpt serve --hooks) runs and proves it is this store's, starting it when nothing answers; when it cannot be proven, warn and open the prompt's turn with a scan of the workspace")
	return cmd
}

// runHook handles one event. Every problem ends as one stderr line; only a
// blocking one changes the exit code (2, which Claude Code reads as "block
// the tool call and show stderr to the model").
func (a *app) runHook(ctx context.Context, o hookOptions) error {
	f := a.hook(ctx, o)
	if f == nil {
		return nil
	}
	a.say("ckpt: hook: %s", f.Msg)
	if f.Block {
		return silentError{exitUsage}
	}
	return nil
}

// hook reads one event from stdin, handles it (hook.Handler) with a
// controller opened for this one event, and prints what the agent expects
// on stdout.
func (a *app) hook(ctx context.Context, o hookOptions) (fail *agent.Failure) {
	in := a.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(in, hook.MaxEvent))
	var shown string // a warning for the person, not only the log
	defer func() {
		// What the agent expects, whatever happens.
		fmt.Fprint(a.stdout, o.ag.Reply(data, fail))
		if conv, ok := o.ag.(agent.Conversation); ok && shown != "" {
			// Shown to the user (Claude Code: a systemMessage); the
			// stderr of a hook that exits 0 only in its verbose mode.
			fmt.Fprint(a.stdout, conv.Notice("warning: "+shown))
		}
	}()
	if err != nil {
		return &agent.Failure{Msg: fmt.Sprintf("read event: %v; nothing recorded", err)}
	}
	if conv, ok := o.ag.(agent.Conversation); ok {
		o.projectDir = conv.ProjectDir(os.Getenv)
	}
	if o.startServer {
		// Before the event: a prompt whose tool calls will not reach a
		// proven server records the whole workspace as its turn opens.
		// The hook server finds the tool calls' workspace from their cwd.
		var ev struct {
			Cwd string `json:"cwd"`
		}
		json.Unmarshal(data, &ev)
		if shown = a.ensureHookServer(ev.Cwd); shown != "" {
			o.scanTurn = true
			a.say("ckpt: hook: warning: %s", shown)
		}
	}
	return a.hookHandler().Handle(ctx, o.ag, hook.Options{Strict: o.strict, ProjectDir: o.projectDir, ScanTurn: o.scanTurn}, data)
}

// hookHandler is the hook of this process's store: its warnings go to
// stderr, its syncs start `ckpt sync` in the background.
func (a *app) hookHandler() *hook.Handler {
	return &hook.Handler{Store: a.store, Say: a.say, Sync: a.startSync, Close: a.closeController}
}
