package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
)

// DefaultMaxDiffBytes bounds the unified diff text one show_diff result
// carries when Options.MaxDiffBytes is 0.
const DefaultMaxDiffBytes = 256 << 10

// Options configure a server.
type Options struct {
	// Version is the server version reported to clients.
	Version string
	// Logger receives the SDK's diagnostics; nil discards them. It must
	// not write to the transport's stream (stdout for stdio).
	Logger *slog.Logger
	// MaxDiffBytes bounds the unified diff text of one show_diff result
	// (DefaultMaxDiffBytes when 0). Past it, further files carry no diff
	// and a note naming the way to see each alone.
	MaxDiffBytes int
}

// server binds the tools to one controller.
type server struct {
	c *controller.Controller
	o Options
	// mu serves one tool call at a time (see the package doc).
	mu sync.Mutex
}

const instructions = `ckpt recorded every file this workspace's agent changed, turn by turn (a turn is one user prompt and everything done in answer; turns are numbered from 0). Use list_checkpoints to find a turn, show_diff to see what rewinding to it would change, and rewind to put files (scope code), ckpt's conversation log (scope conversation) or both back to the start of that turn. Call rewind with dry_run: true first. A rewind never overwrites files changed since the agent left them unless force: true. Every rewind can be undone (undo), and an undo redone (redo); history lists every op. status shows what changed since the open turn began. Each turn lists its steps (its tool calls, numbered from 1): rewind and show_diff with step S go to just before the turn's S-th tool call (code only).`

// New returns an MCP server whose tools drive c. The caller runs it on a
// transport (Server.Run) and closes c when it returns; c must stay open
// while the server runs.
func New(c *controller.Controller, o Options) *mcp.Server {
	if o.MaxDiffBytes <= 0 {
		o.MaxDiffBytes = DefaultMaxDiffBytes
	}
	s := &server{c: c, o: o}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ckpt", Title: "ckpt — rewind an agent's edits", Version: o.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       o.Logger,
			// Tools only, and the list never changes.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	writes := &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}

	add(srv, s, &mcp.Tool{
		Name:        "list_checkpoints",
		Title:       "List checkpoints",
		Description: `List this session's checkpoints, oldest first: one per turn (a user prompt and what the agent did in answer), numbered from 0, with the time it opened, its prompt, and each file it touched with what it did to it (created, modified, deleted, or unchanged). Pass a turn number to show_diff or rewind.`,
		Annotations: readOnly,
		InputSchema: schemaFor[ListInput](nil),
	}, s.list)
	add(srv, s, &mcp.Tool{
		Name:        "show_diff",
		Title:       "Show the diff of a rewind",
		Description: `Show what rewinding the code to the start of a turn would change, file by file, as unified diffs from the current content (a/) to the content at that turn's start (b/). Action "delete" means the file did not exist then and a rewind deletes it. Changes nothing. Binary and oversized files carry a note instead of a diff; a large result is cut, and "path" shows one file alone.`,
		Annotations: readOnly,
		InputSchema: schemaFor[DiffInput](turnMin),
	}, s.diff)
	add(srv, s, &mcp.Tool{
		Name:        "rewind",
		Title:       "Rewind to a turn",
		Description: `Put the session back to the start of a turn. scope "code": every file changed since that turn began gets back its bytes and mode (files created since are deleted); "conversation": that turn and later ones leave ckpt's conversation log, and the turn's prompt is returned to edit and resend; "both" (the default): both as one op. With step S (from list_checkpoints), rewind the code only (the default then) to just before the turn's S-th tool call. Call with dry_run: true first to see the plan and any conflicts. Files changed since the agent left them (by a person or another session) are conflicts: the rewind is refused and changes nothing unless force: true. Before changing anything ckpt stores the current state, so undo reverses the rewind exactly.`,
		Annotations: writes,
		InputSchema: schemaFor[RewindInput](func(s *jsonschema.Schema) {
			turnMin(s)
			sc := s.Properties["scope"]
			sc.Enum = []any{"code", "conversation", "both"}
			// No schema default: absent means both for a turn, code for
			// a step (rewind fills it in).
			s.Properties["step"].Minimum = jsonschema.Ptr(0.0)
		}),
	}, s.rewind)
	add(srv, s, &mcp.Tool{
		Name:        "undo",
		Title:       "Undo the last rewind",
		Description: `Reverse the most recent rewind still in effect (or the op named by "op", an id from history): its files get back the exact bytes they had just before it, and its conversation change is reverted. Call again to walk further back; redo walks forward. If work was done since that rewind (a file it would overwrite changed, or turns were opened since), undo is refused and changes nothing unless force: true; what a forced undo overwrites is kept, and redo brings it back. dry_run: true shows the plan and conflicts.`,
		Annotations: writes,
		InputSchema: schemaFor[UndoInput](opMin),
	}, s.undo)
	add(srv, s, &mcp.Tool{
		Name:        "redo",
		Title:       "Redo the last undo",
		Description: `Re-apply the most recently undone rewind (or the undone op named by "op", an id from history): every file and conversation turn the undo changed gets back what the undo replaced. Refused, changing nothing, when work was done since the undo, unless force: true (what it overwrites is kept; undo brings it back). dry_run: true shows the plan and conflicts.`,
		Annotations: writes,
		InputSchema: schemaFor[UndoInput](opMin),
	}, s.redo)
	add(srv, s, &mcp.Tool{
		Name:        "history",
		Title:       "History of rewinds",
		Description: `List every rewind, revert, summarize, undo and redo of this session, newest first: its id (for undo or redo with "op"), kind, target turn and scope, whether it is in effect, the files it rewrote with their state before and after, and which op a plain undo or redo would reverse next (next_undo, next_redo).`,
		Annotations: readOnly,
		InputSchema: schemaFor[HistoryInput](func(s *jsonschema.Schema) { s.Properties["limit"].Minimum = jsonschema.Ptr(0.0) }),
	}, s.history)
	add(srv, s, &mcp.Tool{
		Name:        "status",
		Title:       "Session status",
		Description: `Show the session and workspace ckpt serves, whether scan mode is on (every turn records the whole workspace, so shell edits are covered too), the open turn, the files added, modified or deleted since it began (every file in scan mode, the captured ones otherwise), and whether an undo or redo is available.`,
		Annotations: readOnly,
		InputSchema: schemaFor[StatusInput](nil),
	}, s.status)
	return srv
}

// schemaFor infers T's JSON schema and lets edit refine it (bounds, enums,
// defaults the struct tags cannot say). T is fixed at compile time, so a
// failure is a programming error. A []byte is a base64 string, as
// encoding/json writes it (path_bytes).
func schemaFor[T any](edit func(*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[[]byte](): {Type: "string", ContentEncoding: "base64"},
	}})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func turnMin(s *jsonschema.Schema) { s.Properties["turn"].Minimum = jsonschema.Ptr(0.0) }
func opMin(s *jsonschema.Schema)   { s.Properties["op"].Minimum = jsonschema.Ptr(0.0) }

// refused wraps the error of a call refused on conflicts: the tool error
// then still carries the structured result naming them, and hint says how
// to call again to overwrite them.
type refused struct {
	err  error
	hint string
}

func (r refused) Error() string { return r.err.Error() }
func (r refused) Unwrap() error { return r.err }

// add registers a typed tool whose handler runs under s.mu and whose
// errors become one-line tool errors.
func add[In, Out any](srv *mcp.Server, s *server, t *mcp.Tool, h func(context.Context, In) (Out, error)) {
	t.OutputSchema = schemaFor[Out](nil)
	mcp.AddTool(srv, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		out, err := h(ctx, in)
		if err == nil {
			return nil, out, nil
		}
		msg := message(err)
		if errors.As(err, new(refused)) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, out, nil
		}
		var zero Out
		return nil, zero, errors.New(msg)
	})
}

// message is err on one line, without package prefixes, with what to call
// about it.
func message(err error) string {
	if r := (refused{}); errors.As(err, &r) {
		return msg.OneLine(err) + r.hint
	}
	return msg.OneLine(err) + hint(err)
}

// hint says which tool or argument helps with err.
func hint(err error) string {
	switch {
	case errors.Is(err, controller.ErrNoTurn), errors.Is(err, controller.ErrNoStep):
		return " (list_checkpoints shows the turns and their steps)"
	case errors.Is(err, controller.ErrPruned):
		return " (retention dropped its files; a conversation rewind still reaches it)"
	// An op that cannot be reversed exactly says itself what to reverse
	// first.
	case errors.Is(err, controller.ErrNothingToUndo),
		errors.Is(err, controller.ErrNotInEffect) && !strings.Contains(err.Error(), "cannot be reversed exactly"):
		return " (history lists every op)"
	case errors.Is(err, controller.ErrBusy):
		return " (try again when it ends)"
	}
	return ""
}

// ListInput is list_checkpoints' (empty) argument object.
type ListInput struct{}

// ListOutput is what list_checkpoints returns.
type ListOutput struct {
	Session     string            `json:"session" jsonschema:"the ckpt session id"`
	Workspace   string            `json:"workspace" jsonschema:"the workspace root directory"`
	Checkpoints []wire.Checkpoint `json:"checkpoints" jsonschema:"one per turn in the active history, oldest first"`
}

func (s *server) list(ctx context.Context, _ ListInput) (ListOutput, error) {
	cps, _, err := s.c.Checkpoints(ctx, controller.ListOptions{Steps: true})
	if err != nil {
		return ListOutput{}, err
	}
	return ListOutput{Session: s.c.Session(), Workspace: s.c.WorkspaceRoot(), Checkpoints: wire.NewCheckpoints(cps)}, nil
}

// DiffInput is show_diff's argument object.
type DiffInput struct {
	Turn int    `json:"turn" jsonschema:"the turn whose start the code would be rewound to"`
	Step int    `json:"step,omitempty" jsonschema:"a step of the turn: the code as just before its step-th tool call (0 or absent: the turn's start)"`
	Path string `json:"path,omitempty" jsonschema:"show only this file (workspace-relative, or absolute inside the workspace)"`
}

// DiffOutput is what show_diff returns: the document `ckpt diff --json`
// prints, whether it was cut, and a summary.
type DiffOutput struct {
	wire.Diff
	// Truncated is set when the diff text was cut at the size bound.
	Truncated bool   `json:"truncated" jsonschema:"the result was cut: files past the bound have no unified diff; ask for each with path"`
	Summary   string `json:"summary"`
}

func (s *server) diff(ctx context.Context, in DiffInput) (DiffOutput, error) {
	if in.Turn < 0 {
		return DiffOutput{}, fmt.Errorf("turn must be a whole number ≥ 0, got %d", in.Turn)
	}
	if in.Step < 0 {
		return DiffOutput{}, fmt.Errorf("step must be a whole number ≥ 1 (0: the turn's start), got %d", in.Step)
	}
	pt := controller.Target{Turn: in.Turn, Step: in.Step}
	want := ""
	if in.Path != "" {
		var err error
		if want, err = s.relPath(in.Path); err != nil {
			return DiffOutput{}, err
		}
	}
	diffs, skipped, err := s.c.Diff(ctx, pt)
	if err != nil {
		return DiffOutput{}, err
	}
	if want != "" {
		diffs = slices.DeleteFunc(diffs, func(d controller.FileDiff) bool { return d.Path != want })
		skipped = slices.DeleteFunc(skipped, func(k controller.Skip) bool { return k.Path != want })
	}
	out := DiffOutput{Diff: wire.NewDiff(pt, diffs, skipped)}
	total := 0
	for i, d := range out.Files {
		if want == "" && total+len(d.Unified) > s.o.MaxDiffBytes {
			out.Files[i].Unified = ""
			out.Files[i].Note = fmt.Sprintf("diff omitted: the result is over %d bytes; call show_diff with path %q", s.o.MaxDiffBytes, d.Path)
			out.Truncated = true
		}
		total += len(out.Files[i].Unified)
	}
	switch {
	case len(out.Files) == 0 && want != "":
		out.Summary = fmt.Sprintf("rewinding the code to turn %s would not change %s", pt, want)
	case len(out.Files) == 0:
		out.Summary = fmt.Sprintf("rewinding the code to turn %s would change nothing", pt)
	default:
		restore, del := 0, 0
		for _, d := range out.Files {
			if d.Action == "delete" {
				del++
			} else {
				restore++
			}
		}
		out.Summary = fmt.Sprintf("rewinding the code to turn %s would restore %d file(s) and delete %d", pt, restore, del)
	}
	if len(out.Skipped) > 0 {
		out.Summary += fmt.Sprintf(", and skip %d", len(out.Skipped))
	}
	return out, nil
}

// relPath makes p a clean workspace-relative slash path, refusing one that
// leaves the workspace.
func (s *server) relPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(s.c.WorkspaceRoot(), p)
		if err != nil {
			return "", fmt.Errorf("path %s: %w", p, err)
		}
		p = r
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) {
		return "", fmt.Errorf("path %s is not a file inside the workspace %s", p, s.c.WorkspaceRoot())
	}
	return c, nil
}

// RewindInput is rewind's argument object.
type RewindInput struct {
	Turn   int    `json:"turn" jsonschema:"the turn to go back to the start of (from list_checkpoints)"`
	Step   int    `json:"step,omitempty" jsonschema:"a step of the turn (from list_checkpoints): go back to just before its step-th tool call, code only (0 or absent: the turn's start)"`
	Scope  string `json:"scope,omitempty" jsonschema:"code (files), conversation (ckpt's conversation log) or both; a step takes code only (its default)"`
	DryRun bool   `json:"dry_run,omitempty" jsonschema:"report what would change, and conflicts, and change nothing"`
	Force  bool   `json:"force,omitempty" jsonschema:"overwrite files changed since the agent left them (their current content is kept: undo brings it back)"`
}

// UndoInput is undo's and redo's argument object.
type UndoInput struct {
	DryRun bool  `json:"dry_run,omitempty" jsonschema:"report what would change, and conflicts, and change nothing"`
	Force  bool  `json:"force,omitempty" jsonschema:"overwrite work done since (it is kept: the opposite call brings it back)"`
	Op     int64 `json:"op,omitempty" jsonschema:"an op id from history to act on instead of the newest (0 or absent: the newest)"`
}

// Result is what rewind, undo and redo return: the document
// `ckpt rewind --json` prints, and a summary.
type Result struct {
	wire.Result
	Summary string `json:"summary"`
}

func result(r controller.Result) Result { return Result{Result: wire.NewResult(r)} }

func (s *server) rewind(ctx context.Context, in RewindInput) (Result, error) {
	if in.Turn < 0 {
		return Result{}, fmt.Errorf("turn must be a whole number ≥ 0, got %d", in.Turn)
	}
	if in.Step < 0 {
		return Result{}, fmt.Errorf("step must be a whole number ≥ 1 (0: the turn's start), got %d", in.Step)
	}
	if in.Scope == "" {
		in.Scope = string(controller.ScopeBoth)
		if in.Step > 0 {
			in.Scope = string(controller.ScopeCode) // a step rewinds code only
		}
	}
	var sc controller.Scope
	if err := sc.UnmarshalText([]byte(in.Scope)); err != nil {
		return Result{}, err
	}
	pt := controller.Target{Turn: in.Turn, Step: in.Step}
	if !in.DryRun {
		// Once begun, a rewind finishes even if the client gives up on
		// it: an interrupted op would wait for the next Open.
		ctx = context.WithoutCancel(ctx)
	}
	res, err := s.c.Rewind(ctx, pt, sc, controller.RewindOptions{DryRun: in.DryRun, Force: in.Force})
	out := result(res)
	if err != nil {
		if errors.Is(err, controller.ErrConflict) {
			out.Turn, out.Step, out.Scope = in.Turn, in.Step, string(sc)
			out.Summary = fmt.Sprintf("refused: %d file(s) changed since the agent left them; nothing changed", len(out.Conflicts))
			return out, refused{err, " — call rewind again with force: true to overwrite them"}
		}
		return Result{}, err
	}
	what := fmt.Sprintf("turn %s, %s", controller.Target{Turn: out.Turn, Step: out.Step}, out.Scope)
	switch {
	case !out.Changed:
		out.Summary = fmt.Sprintf("nothing to rewind (%s): the files are as they were at its start", what)
	case out.DryRun && len(out.Conflicts) > 0:
		out.Summary = fmt.Sprintf("dry run, nothing changed: rewinding (%s) would do %s, and needs force: true to overwrite %d file(s) changed since", what, out.Counts(), len(out.Conflicts))
	case out.DryRun:
		out.Summary = fmt.Sprintf("dry run, nothing changed: rewinding (%s) would do %s", what, out.Counts())
	default:
		out.Summary = fmt.Sprintf("rewound (%s): %s; undo reverses it", what, out.Counts())
	}
	if out.Scope != string(controller.ScopeCode) && out.Prompt != "" && !out.DryRun {
		out.Summary += "; the conversation is cut before that turn, its prompt is in prompt"
	}
	return out, nil
}

func (s *server) undo(ctx context.Context, in UndoInput) (Result, error) {
	return s.reverse(ctx, in, false)
}

func (s *server) redo(ctx context.Context, in UndoInput) (Result, error) {
	return s.reverse(ctx, in, true)
}

func (s *server) reverse(ctx context.Context, in UndoInput, redo bool) (Result, error) {
	verb, other := "undo", "redo"
	if redo {
		verb, other = "redo", "undo"
	}
	if in.Op < 0 {
		return Result{}, fmt.Errorf("op must be an op id from history (a whole number ≥ 1), got %d", in.Op)
	}
	if !in.DryRun {
		ctx = context.WithoutCancel(ctx) // as in rewind
	}
	o := controller.RewindOptions{DryRun: in.DryRun, Force: in.Force, Op: in.Op}
	var res controller.Result
	var err error
	if redo {
		res, err = s.c.Redo(ctx, o)
	} else {
		res, err = s.c.Undo(ctx, o)
	}
	out := result(res)
	if err != nil {
		if errors.Is(err, controller.ErrConflict) {
			out.Summary = fmt.Sprintf("refused: work was done since (%s); nothing changed", quote.List(out.Conflicts))
			return out, refused{err, " — call again with force: true to overwrite that work (history lists every op)"}
		}
		return Result{}, err
	}
	what := fmt.Sprintf("turn %s, %s", controller.Target{Turn: out.Turn, Step: out.Step}, out.Scope)
	switch {
	case !out.Changed:
		out.Summary = fmt.Sprintf("nothing to %s: the state it would bring back is there already", verb)
	case out.DryRun && len(out.Conflicts) > 0:
		out.Summary = fmt.Sprintf("dry run, nothing changed: %s (%s) would do %s, and needs force: true to overwrite work done since", verb, what, out.Counts())
	case out.DryRun:
		out.Summary = fmt.Sprintf("dry run, nothing changed: %s (%s) would do %s", verb, what, out.Counts())
	default:
		out.Summary = fmt.Sprintf("%s done (%s): %s; %s reverses it", verb, what, out.Counts(), other)
	}
	return out, nil
}

// HistoryInput is history's argument object.
type HistoryInput struct {
	Limit int `json:"limit,omitempty" jsonschema:"at most this many ops, newest first (0 or absent: all)"`
}

// HistoryOutput is what history returns (the entries of
// `ckpt history --json`).
type HistoryOutput struct {
	Ops []wire.HistoryEntry `json:"ops" jsonschema:"the ops, newest first"`
	// Total counts every op, also those past limit.
	Total int `json:"total" jsonschema:"how many ops the session has"`
}

func (s *server) history(ctx context.Context, in HistoryInput) (HistoryOutput, error) {
	if in.Limit < 0 {
		return HistoryOutput{}, fmt.Errorf("limit must be ≥ 0, got %d", in.Limit)
	}
	h, err := s.c.History(ctx)
	if err != nil {
		return HistoryOutput{}, err
	}
	total := len(h)
	if in.Limit > 0 && len(h) > in.Limit {
		h = h[:in.Limit]
	}
	return HistoryOutput{Ops: wire.NewHistory(h), Total: total}, nil
}

// StatusInput is status's (empty) argument object.
type StatusInput struct{}

// StatusOutput is what status returns.
type StatusOutput struct {
	Session    string        `json:"session" jsonschema:"the ckpt session id"`
	Workspace  string        `json:"workspace" jsonschema:"the workspace root directory"`
	Store      string        `json:"store" jsonschema:"the store directory the session lives in"`
	Scan       bool          `json:"scan" jsonschema:"scan mode: each turn records the whole workspace, so edits made through a shell are covered"`
	OpenTurn   *int          `json:"open_turn" jsonschema:"the turn now open; null before the first turn"`
	OpenPrompt string        `json:"open_prompt" jsonschema:"the open turn's prompt"`
	Changes    []wire.Change `json:"changes" jsonschema:"files added, modified or deleted since the open turn began"`
	CanUndo    bool          `json:"can_undo" jsonschema:"a rewind is in effect that undo would reverse"`
	CanRedo    bool          `json:"can_redo" jsonschema:"an undone op that redo would re-apply"`
	Summary    string        `json:"summary"`
}

func (s *server) status(ctx context.Context, _ StatusInput) (StatusOutput, error) {
	out := StatusOutput{Session: s.c.Session(), Workspace: s.c.WorkspaceRoot(), Store: s.c.Store().Dir(), Changes: []wire.Change{}}
	scan, err := s.c.Meta(ctx, "scan")
	if err != nil {
		return StatusOutput{}, err
	}
	out.Scan = scan == "on"
	hist, err := s.c.History(ctx)
	if err != nil {
		return StatusOutput{}, err
	}
	for _, e := range hist {
		out.CanUndo = out.CanUndo || e.NextUndo
		out.CanRedo = out.CanRedo || e.NextRedo
	}
	open, err := s.c.Turn(ctx, -1)
	if errors.Is(err, controller.ErrNoOpenTurn) {
		out.Summary = fmt.Sprintf("no turn yet in session %s; scan mode %s", out.Session, scan)
		return out, nil
	}
	if err != nil {
		return StatusOutput{}, err
	}
	out.OpenTurn, out.OpenPrompt = &open.Turn, open.Prompt
	changes, err := s.c.Status(ctx)
	if err != nil {
		return StatusOutput{}, err
	}
	out.Changes = wire.NewChanges(changes)
	out.Summary = fmt.Sprintf("turn %d open, %d file(s) changed since it began; scan mode %s", open.Turn, len(out.Changes), scan)
	return out, nil
}
