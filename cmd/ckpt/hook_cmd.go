package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/remote"
	"github.com/spf13/cobra"
)

type hookOptions struct {
	ag agent.Agent
	hook.RunOptions
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
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "block the tool call (exit 2) when its capture fails")
	cmd.Flags().BoolVar(&o.StartServer, "start-server", false, "first make sure the resident hook server (ckpt serve --hooks) runs and proves it is this store's, starting it when nothing answers; when it cannot be proven, warn and open the prompt's turn with a scan of the workspace")
	return cmd
}

// runHook handles one event (hook.Handler's Run). Every problem ends as
// one stderr line; only a blocking one changes the exit code (2, which
// Claude Code reads as "block the tool call and show stderr to the
// model").
func (a *app) runHook(ctx context.Context, o hookOptions) error {
	exe, _ := os.Executable()
	o.Exe, o.Getenv = exe, os.Getenv
	f := a.hookHandler().Run(ctx, o.ag, o.RunOptions, a.stdin, a.stdout)
	if f == nil {
		return nil
	}
	a.say("ckpt: hook: %s", f.Msg)
	if f.Block {
		return silentError{exitUsage}
	}
	return nil
}

// hookHandler is the hook of this process's store: its warnings go to
// stderr, its syncs start `ckpt sync` in the background.
func (a *app) hookHandler() *hook.Handler {
	return &hook.Handler{Store: a.store, Say: a.say, Sync: a.startSync, Close: a.closeController}
}

// startSync starts `ckpt sync` in the background (hook.StartDetached)
// when the store has a remote and no background sync of it is running.
// No remote configured: nothing happens.
func (a *app) startSync() {
	if _, err := remote.LoadConfig(a.store); err != nil {
		if !errors.Is(err, remote.ErrNoRemote) {
			a.say("ckpt: hook: warning: remote: %s; not syncing", oneLine(err))
		}
		return
	}
	exe, err := os.Executable()
	if err == nil {
		err = hook.StartDetached(a.store, exe, hook.SyncLockFile, hook.SyncLogFile, "sync")
	}
	if err != nil {
		a.say("ckpt: hook: warning: background sync: %s", oneLine(err))
	}
}
