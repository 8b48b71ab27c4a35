package main

import "github.com/spf13/cobra"

// helpTopics are `ckpt help TOPIC` pages for the three common ways in:
// by hand, under Claude Code, and from a desktop or web front-end. A
// cobra command with neither Run nor subcommands is listed under
// "Additional help topics".
var helpTopics = []struct{ name, short, long string }{
	{"by-hand", "Using ckpt by hand or from your own scripts", `Using ckpt by hand (or from any agent loop you script yourself):

  ckpt turn "add a login page"       # open turn 0 with the user's prompt
  ckpt capture web/login.html        # before each tool writes, renames or deletes a file
  ...the agent edits web/login.html...
  ckpt turn "make it blue"           # the next prompt opens turn 1
  ckpt list                          # turns and what each did (+ created, ~ modified, - deleted)
  ckpt diff 1                        # what rewinding the code to turn 1 would change
  ckpt rewind 1 --scope code         # files back to the start of turn 1
  ckpt undo                          # changed your mind: exactly as before
  ckpt history; ckpt redo            # every rewind and undo is recorded, and can be redone

Shell commands change files no capture sees: "ckpt scan on" makes every turn
start with a manifest of the workspace, so a rewind also undoes rm, mv and
sed -i, and deletes files created since.

The workspace is found as git finds its repository: run ckpt anywhere inside
it. Each workspace has its own default session; --session picks another.`},
	{"claude", "Using ckpt with Claude Code (hooks)", `Using ckpt with Claude Code:

  ckpt install claude                # hooks in .claude/settings.json (--user: ~/.claude)

Then every prompt opens a turn (UserPromptSubmit) and every Write, Edit or
NotebookEdit is captured before it runs (PreToolUse); install turns scan
mode on for the workspace, so what Bash commands change is rewound too
(--no-scan leaves it off). Each Claude Code session is a ckpt session named
by its session id:

  ckpt sessions                      # which session belongs to which workspace
  ckpt --session ID list
  ckpt --session ID rewind 3 --scope code
  ckpt --session ID undo

"ckpt uninstall claude" removes exactly what install added. The hooks never
block Claude unless installed with --strict.

Other agents are wired the same way: ckpt install codex, gemini, cursor,
copilot, cline, windsurf or opencode ("ckpt install --help").`},
	{"frontend", "Driving ckpt from a desktop, web or TUI front-end", `Driving ckpt from a front-end:

  ckpt serve                         # the API and a web page on 127.0.0.1

serve prints one JSON line on stdout for the program that started it; its
open_url is the page, token included. The page shows the session and its
workspace, lists turns, previews a rewind as a diff with the files changed
since the agent left them, rewinds code, conversation or both (forcing over
changed files takes a second confirmation), and lists the history with Undo
and Redo. docs/http.md lists the routes and their JSON.

A Go program embeds the same thing: import github.com/ckpt/ckpt/controller
(Open, BeginTurn, Capture, Rewind, Undo, Subscribe); "go doc ./controller"
documents it. Every command also takes --json for one stable JSON document
on stdout.`},
}

func addHelpTopics(root *cobra.Command) {
	for _, t := range helpTopics {
		root.AddCommand(&cobra.Command{Use: t.name, Short: t.short, Long: t.long})
	}
}
