package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt/ckpt/agent"
)

// RunOptions are how Run handles one event, as `ckpt hook AGENT` does.
type RunOptions struct {
	// Strict makes a PreToolUse whose capture fails block the tool call.
	Strict bool
	// StartServer makes sure the resident hook server runs, proven,
	// before the event is handled (EnsureServer, with Exe): what `ckpt
	// install claude --http` installs on the prompt and session-start
	// events. When it cannot be proven, the prompt's turn records the
	// whole workspace, and the agent shows the user why.
	StartServer bool
	// Exe is the ckpt executable that runs the hook server.
	Exe string
	// Getenv reads the hook process's environment (an agent's project
	// directory); nil reads none.
	Getenv func(string) string
}

// Run handles one event of ag read from in, with a controller opened for
// it (Handle), and writes on out what the agent expects there, whatever
// happens. The failure, if any, is what the hook reports: one line,
// blocking the tool call when it says so.
func (hd *Handler) Run(ctx context.Context, ag agent.Agent, o RunOptions, in io.Reader, out io.Writer) (fail *agent.Failure) {
	if in == nil {
		in = strings.NewReader("")
	}
	data, err := io.ReadAll(io.LimitReader(in, MaxEvent))
	var shown string // a warning for the person, not only the log
	defer func() {
		// What the agent expects, whatever happens.
		fmt.Fprint(out, ag.Reply(data, fail))
		if conv, ok := ag.(agent.Conversation); ok && shown != "" {
			// Shown to the user (Claude Code: a systemMessage); the
			// stderr of a hook that exits 0 only in its verbose mode.
			fmt.Fprint(out, conv.Notice("warning: "+shown))
		}
	}()
	if err != nil {
		return &agent.Failure{Msg: fmt.Sprintf("read event: %v; nothing recorded", err)}
	}
	ho := Options{Strict: o.Strict}
	if conv, ok := ag.(agent.Conversation); ok && o.Getenv != nil {
		ho.ProjectDir = conv.ProjectDir(o.Getenv)
	}
	if o.StartServer {
		// Before the event: a prompt whose tool calls will not reach a
		// proven server records the whole workspace as its turn opens.
		// The hook server finds the tool calls' workspace from their cwd.
		var ev struct {
			Cwd string `json:"cwd"`
		}
		json.Unmarshal(data, &ev)
		if shown = EnsureServer(hd.Store, o.Exe, ev.Cwd); shown != "" {
			ho.ScanTurn = true
			hd.say("ckpt: hook: warning: %s", shown)
		}
	}
	return hd.Handle(ctx, ag, ho, data)
}
