package acpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/quote"
)

// command is a slash command the proxy answers itself.
type command struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *commandInput `json:"input,omitempty"`
}

type commandInput struct {
	Hint string `json:"hint"`
}

func ownCommands() []command {
	return []command{
		{Name: "checkpoints", Description: "ckpt: list the turns and tool calls /rewind can go back to"},
		{Name: "rewind", Description: "ckpt: put the files back as they were at the start of a turn, or just before one of its tool calls",
			Input: &commandInput{Hint: "TURN or TURN.STEP from /checkpoints, then force to overwrite files changed since"}},
		{Name: "undo", Description: "ckpt: reverse the last rewind", Input: &commandInput{Hint: "force to overwrite work done since"}},
		{Name: "redo", Description: "ckpt: re-apply the last undone rewind", Input: &commandInput{Hint: "force to overwrite work done since"}},
	}
}

// ownCommand reports whether text invokes one of ckpt's commands, and
// which, with its arguments.
func ownCommand(text string) (name string, args []string, ok bool) {
	f := strings.Fields(text)
	if len(f) == 0 || !strings.HasPrefix(f[0], "/") {
		return "", nil, false
	}
	for _, c := range ownCommands() {
		if f[0] == "/"+c.Name {
			return c.Name, f[1:], true
		}
	}
	return "", nil, false
}

// withOwnCommands adds ckpt's commands to an available_commands_update
// line, in place of any of the agent's of the same name (the proxy
// answers those). The rest of the message is kept.
func withOwnCommands(line []byte) ([]byte, error) {
	var msg, params, update map[string]json.RawMessage
	var cmds []json.RawMessage
	if json.Unmarshal(line, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil ||
		json.Unmarshal(params["update"], &update) != nil {
		return line, nil
	}
	if raw, ok := update["availableCommands"]; ok && json.Unmarshal(raw, &cmds) != nil {
		return line, nil
	}
	ours := ownCommands()
	kept := make([]json.RawMessage, 0, len(cmds)+len(ours))
next:
	for _, c := range cmds {
		var n struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(c, &n) == nil {
			for _, o := range ours {
				if n.Name == o.Name {
					continue next
				}
			}
		}
		kept = append(kept, c)
	}
	for _, o := range ours {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		kept = append(kept, b)
	}
	var err error
	if update["availableCommands"], err = json.Marshal(kept); err != nil {
		return nil, err
	}
	if params["update"], err = json.Marshal(update); err != nil {
		return nil, err
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return nil, err
	}
	out, err := json.Marshal(msg)
	return append(out, '\n'), err
}

// answer runs one of ckpt's commands for a prompt and answers it: the
// text as an agent message, then the prompt's response.
func (p *Proxy) answer(ctx context.Context, reqID json.RawMessage, id, name string, args []string) error {
	var text string
	if s := p.session(id); s == nil {
		text = fmt.Sprintf("ckpt does not record ACP session %s (it saw no session/new or session/load for it, or could not open its store), so /%s cannot act on it.", id, name)
	} else {
		text = p.run(ctx, s.c, name, args)
	}
	chunk, err := json.Marshal(map[string]any{"sessionUpdate": "agent_message_chunk",
		"content": map[string]any{"type": "text", "text": text}})
	if err != nil {
		return err
	}
	if err := p.notify(id, chunk); err != nil {
		return err
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": reqID, "result": map[string]any{"stopReason": "end_turn"}})
	if err != nil {
		return err
	}
	return p.toClient.write(append(b, '\n'))
}

// run runs command name with args in c and says what it did.
func (p *Proxy) run(ctx context.Context, c *controller.Controller, name string, args []string) string {
	// Once begun, an op finishes even if the editor goes away.
	ctx = context.WithoutCancel(ctx)
	switch name {
	case "checkpoints":
		return checkpointsText(ctx, c)
	case "rewind":
		return rewindText(ctx, c, args)
	default:
		force, err := forceArg(args)
		if err != nil {
			return fmt.Sprintf("/%s: %s. Usage: /%s [force]", name, err, name)
		}
		return reverseText(ctx, c, name == "redo", force)
	}
}

func forceArg(args []string) (bool, error) {
	force := false
	for _, a := range args {
		switch a {
		case "force", "--force":
			force = true
		default:
			return false, fmt.Errorf("unknown argument %q", a)
		}
	}
	return force, nil
}

func checkpointsText(ctx context.Context, c *controller.Controller) string {
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{Steps: true})
	if err != nil {
		return "ckpt could not list the checkpoints: " + oneLine(err)
	}
	if len(cps) == 0 {
		return fmt.Sprintf("No checkpoints yet in ckpt session %s: each prompt opens one.", c.Session())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Checkpoints of ckpt session %s (workspace %s):\n", c.Session(), c.WorkspaceRoot())
	for _, cp := range cps {
		prompt, _, _ := strings.Cut(cp.Prompt, "\n")
		if r := []rune(prompt); len(r) > 72 {
			prompt = string(r[:71]) + "…"
		}
		fmt.Fprintf(&b, "\nturn %d  %s  %s\n", cp.Turn, cp.Time.Local().Format("2006-01-02 15:04:05"), prompt)
		if cp.Pruned {
			b.WriteString("  (its files were pruned by retention)\n")
		}
		for _, f := range cp.Changes {
			fmt.Fprintf(&b, "  %s %s\n", f.Kind, quote.Path(f.Path))
		}
		for _, st := range cp.Steps {
			var files []string
			for _, f := range st.Files {
				files = append(files, f.Path)
			}
			fmt.Fprintf(&b, "  step %d.%d %s: %s\n", st.Turn, st.Number, st.Tool, quote.List(files))
		}
	}
	b.WriteString("\n/rewind TURN puts the files back as they were at the start of that turn; /rewind TURN.STEP to just before that tool call. /undo reverses a rewind.")
	return b.String()
}

const conversationUnsupported = "ckpt rewinds the code only here: the agent keeps the conversation itself, and ACP gives no way to load a session at an earlier point. Nothing was changed. To go on from an earlier point, /rewind the code and start a new session (or tell the agent what was undone)."

func rewindText(ctx context.Context, c *controller.Controller, args []string) string {
	const usage = "Usage: /rewind TURN[.STEP] [force] (/checkpoints lists the turns and steps)."
	var pt *controller.Target
	force := false
	for _, a := range args {
		switch a {
		case "force", "--force":
			force = true
		case "code", "--scope=code":
		case "conversation", "both", "--scope=conversation", "--scope=both":
			return conversationUnsupported
		default:
			if pt != nil {
				return fmt.Sprintf("/rewind: unknown argument %q. %s", a, usage)
			}
			var q controller.Target
			if err := q.UnmarshalText([]byte(a)); err != nil {
				return fmt.Sprintf("/rewind: %s. %s", err, usage)
			}
			pt = &q
		}
	}
	if pt == nil {
		return "/rewind needs a turn. " + usage
	}
	res, err := c.Rewind(ctx, *pt, controller.ScopeCode, controller.RewindOptions{Force: force})
	switch {
	case errors.Is(err, controller.ErrConflict):
		return fmt.Sprintf("Refused: %s changed since the agent left them, and nothing was changed. /rewind %s force overwrites them (/undo then brings them back).",
			quote.List(res.Conflicts), pt)
	case errors.Is(err, controller.ErrNoTurn), errors.Is(err, controller.ErrNoStep):
		return fmt.Sprintf("/rewind %s: %s (/checkpoints lists the turns and steps).", pt, oneLine(err))
	case err != nil:
		return fmt.Sprintf("/rewind %s failed: %s", pt, oneLine(err))
	case !res.Changed:
		return fmt.Sprintf("Nothing to rewind: the files are as they were at %s.", where(*pt))
	}
	return fmt.Sprintf("Rewound the files to %s: %s. /undo reverses it. The agent still remembers its later edits: tell it what was undone.",
		where(*pt), counts(res))
}

func where(pt controller.Target) string {
	if pt.Step == 0 {
		return fmt.Sprintf("the start of turn %d", pt.Turn)
	}
	return fmt.Sprintf("just before step %s of turn %d", pt, pt.Turn)
}

func counts(r controller.Result) string {
	s := fmt.Sprintf("%d restored, %d deleted", len(r.Restored), len(r.Deleted))
	if len(r.Restored) > 0 {
		s += " (restored " + quote.List(r.Restored) + ")"
	}
	if len(r.Deleted) > 0 {
		s += " (deleted " + quote.List(r.Deleted) + ")"
	}
	if len(r.Skipped) > 0 {
		var k []string
		for _, x := range r.Skipped {
			k = append(k, x.Path)
		}
		s += fmt.Sprintf(", %d left alone (%s)", len(r.Skipped), quote.List(k))
	}
	return s
}

func reverseText(ctx context.Context, c *controller.Controller, redo, force bool) string {
	verb, other := "undo", "redo"
	if redo {
		verb, other = "redo", "undo"
	}
	o := controller.RewindOptions{Force: force}
	var res controller.Result
	var err error
	if redo {
		res, err = c.Redo(ctx, o)
	} else {
		res, err = c.Undo(ctx, o)
	}
	switch {
	case errors.Is(err, controller.ErrConflict):
		return fmt.Sprintf("Refused: work was done since (%s), and nothing was changed. /%s force overwrites it (/%s then brings it back).",
			quote.List(res.Conflicts), verb, other)
	case errors.Is(err, controller.ErrNothingToUndo):
		return fmt.Sprintf("Nothing to %s.", verb)
	case err != nil:
		return fmt.Sprintf("/%s failed: %s", verb, oneLine(err))
	case !res.Changed:
		return fmt.Sprintf("Nothing to %s: the files are as it would leave them.", verb)
	}
	return fmt.Sprintf("%s done: %s. /%s reverses it.", strings.ToUpper(verb[:1])+verb[1:], counts(res), other)
}
