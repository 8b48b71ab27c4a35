package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/jsondoc"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/ckpt/ckpt/internal/version"
	"github.com/spf13/cobra"
)

// Exit codes of the CLI contract.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError marks an error as the caller's mistake (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// silentError carries an exit code for failures already reported on stderr.
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// app is what every command shares: the global flags and the streams.
type app struct {
	workspace string
	session   string
	store     string
	json      bool
	located   bool // locate has settled workspace and session
	// named says the session was named (--session, $CKPT_SESSION), not
	// chosen by locate; record says the command records (turn, capture,
	// message, step, scan on|off): it may create the session it names.
	named, record bool
	// picked is set when locate chose the workspace's most recently
	// active session, which is not its default one: open says so.
	picked bool
	// missing is locate's error for a session the store does not have,
	// for open to return (a command that records creates it).
	missing error
	warned  bool // the store's warning was shown

	stdin          io.Reader
	stdout, stderr io.Writer
}

// open opens the controller for the global flags, for a command that
// reads or rewinds: a session the store does not have is an error naming
// the sessions the workspace has, and nothing is created.
func (a *app) open(ctx context.Context) (*controller.Controller, error) {
	return a.openSession(ctx, false)
}

// openRecord opens the controller for a command that records: the
// session is created when the store does not have it yet.
func (a *app) openRecord(ctx context.Context) (*controller.Controller, error) {
	a.record = true
	return a.openSession(ctx, true)
}

func (a *app) openSession(ctx context.Context, create bool) (*controller.Controller, error) {
	if err := a.locate(ctx); err != nil {
		return nil, storeHint(err)
	}
	if a.missing != nil && !create {
		return nil, a.missing
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: a.workspace, Session: a.session, Store: a.store, NoCreate: !create, ExitAfterClose: exitAfterRun})
	if errors.Is(err, controller.ErrWorkspaceMismatch) {
		return nil, fmt.Errorf("%w (run ckpt from inside that workspace, or pass --workspace DIR, or --session ID for another session)", err)
	}
	if err == nil && a.picked {
		a.say("ckpt: session %s, the last active in %s (--session ID picks another; `ckpt sessions` lists them)", a.session, quote.Path(a.workspace))
	}
	if err == nil && c.Recovered() != "" {
		a.say("ckpt: %s", c.Recovered())
	}
	if err == nil {
		a.warnStore(c.Store().Warning())
	}
	return c, storeHint(err)
}

// noSessionYet is the error for a workspace with no session and none
// named: a listing takes it for an empty one (emptyList).
type noSessionYet struct{ err error }

func (e noSessionYet) Error() string {
	return "no checkpoints yet: " + e.err.Error() + " (open a turn with `ckpt turn PROMPT`, or record an agent's with `ckpt install AGENT`)"
}
func (e noSessionYet) Unwrap() error { return e.err }

// emptyList answers a listing command whose open failed with err, a
// noSessionYet: an empty JSON list, or the reason on stderr.
func (a *app) emptyList(err error) error {
	if a.json {
		return a.printJSON([]any{})
	}
	a.say("%s", oneLine(err))
	return nil
}

// sessionError adds what to do to Store.Resolve's *SessionError.
func sessionError(e *controller.SessionError) error {
	switch {
	case len(e.Ambiguous) > 0:
		return usageError{hinted{e, "give more of the id"}}
	case !e.Named && len(e.Sessions) == 0:
		return noSessionYet{e}
	case len(e.Sessions) > 5:
		return hinted{e, "`ckpt sessions` lists them; --session ID picks one"}
	case len(e.Sessions) > 0:
		return hinted{e, "--session ID picks one"}
	}
	return e
}

// exitAfterRun is set by main: this process exits once run returns, so a
// command may leave to the exit what only costs time to tidy up
// (controller.Options.ExitAfterClose). Tests that call run directly leave it unset.
var exitAfterRun bool

// locate settles the workspace and session by Store.Resolve, once: an
// explicit workspace (--workspace, $CKPT_WORKSPACE) is used as given,
// else the one enclosing the current directory; a session named by a
// unique prefix of its id is that session (not for a command that
// records); with none named, the workspace's most recently active one. A
// session that does not exist is an error for open, not for locate
// (install settles the workspace before any session exists).
func (a *app) locate(ctx context.Context) error {
	if a.located {
		return nil
	}
	o := controller.ResolveOptions{Workspace: a.workspace, Session: a.session, Create: a.record}
	if !a.named {
		o.Session = ""
	}
	if a.workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("current directory: %w (pass --workspace DIR)", err)
		}
		o.Dir = wd
	}
	loc, err := controller.OpenStore(a.store).Resolve(ctx, o)
	var se *controller.SessionError
	if errors.As(err, &se) && len(se.Ambiguous) == 0 {
		a.missing, err = sessionError(se), nil
	}
	if err != nil {
		if errors.As(err, &se) {
			return sessionError(se)
		}
		return err
	}
	a.workspace, a.session, a.picked = loc.Workspace, loc.Session, loc.Picked
	a.located = true
	return nil
}

// storeSession is the session id names in the whole store (Store.Resolve):
// that session, or the one whose id it uniquely starts; an ambiguous
// prefix is a usage error listing the matches, and a session the store
// does not have is an error naming it and the store.
func (a *app) storeSession(ctx context.Context, id string) (string, error) {
	loc, err := controller.OpenStore(a.store).Resolve(ctx, controller.ResolveOptions{Session: id})
	if se := (*controller.SessionError)(nil); errors.As(err, &se) {
		return id, sessionError(se)
	}
	return loc.Session, err
}

// warnStore shows the store's warning (readable by others), once per run.
func (a *app) warnStore(w string) {
	if w != "" && !a.warned {
		a.warned = true
		a.say("ckpt: warning: %s", w)
	}
}

// printJSON writes v as one indented JSON document on stdout, every list
// in it [] and never null.
func (a *app) printJSON(v any) error {
	return jsondoc.Encode(a.stdout, v, true)
}

// say writes a message for people on stderr.
func (a *app) say(format string, args ...any) {
	fmt.Fprintf(a.stderr, format+"\n", args...)
}

// run is the whole CLI: it parses args, runs the command and maps its error
// to an exit code and one line on stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var silent silentError
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintln(stderr, "ckpt: "+oneLine(err)+hint(err))
	var usage usageError
	if errors.As(err, &usage) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFail
}

// hint is what to do about a library error, for people at a terminal: the
// libraries say what happened, the CLI says which command helps.
func hint(err error) string {
	switch {
	case errors.Is(err, controller.ErrNoOpenTurn):
		return " (open one with `ckpt turn PROMPT` first)"
	case errors.Is(err, controller.ErrNoTurn) && strings.Contains(err.Error(), "hidden by a conversation rewind"):
		return "; `ckpt undo` brings it back"
	case errors.Is(err, controller.ErrNoTurn):
		return " (`ckpt list` shows the turns)"
	case errors.Is(err, controller.ErrBlobNotFound):
		return " (`ckpt verify` checks the store)"
	}
	return ""
}

// oneLine flattens an error to one line for people (msg.OneLine).
func oneLine(err error) string { return msg.OneLine(err) }

// isCobraUsage recognises cobra's own argument errors, which it does not
// type.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most"} {
		if strings.HasPrefix(s, p) || strings.Contains(s, " "+p) {
			return true
		}
	}
	return false
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "ckpt",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.resolveGlobals(cmd)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(flagError)
	f := root.PersistentFlags()
	f.StringVar(&a.workspace, "workspace", "", "")
	f.StringVar(&a.session, "session", "", "")
	f.StringVar(&a.store, "store", "", "")
	f.BoolVar(&a.json, "json", false, "")
	// Every command, registered here and only here (help lists them
	// sorted by name).
	root.AddCommand(
		newTurnCmd(a), newCaptureCmd(a), newMessageCmd(a), newListCmd(a), newLogCmd(a),
		newDiffCmd(a), newRewindCmd(a), newUndoCmd(a), newRedoCmd(a), newRevertCmd(a), newHistoryCmd(a),
		newForkCmd(a), newSummarizeCmd(a), newDemoCmd(a),
		newPinCmd(a, true), newPinCmd(a, false), newPruneCmd(a), newGCCmd(a), newVerifyCmd(a), newSessionsCmd(a),
		newScanCmd(a), newStatusCmd(a), newVersionCmd(a), newStepCmd(a),
		newHookCmd(a), newInstallCmd(a), newUninstallCmd(a), newServeCmd(a),
		newStatusLineCmd(a), newMCPCmd(a), newACPCmd(a), newRemoteCmd(a), newSyncCmd(a), newPullCmd(a),
	)
	root.Version = version.Read().String()
	root.SetVersionTemplate("ckpt {{.Version}}\n")
	root.SetHelpCommand(&cobra.Command{
		Use: "help [COMMAND | TOPIC]",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("no command or help topic %q (`ckpt help` lists them)", strings.Join(args, " "))
			}
			return c.Help()
		},
	})
	root.InitDefaultHelpCmd()
	addHelp(root)
	return root
}

// flagError makes a flag parsing error a usage error; a negative number
// given where a TURN goes, which the parser takes for a flag ("-1"), is
// said as what it is.
func flagError(cmd *cobra.Command, err error) error {
	const unknown = "unknown shorthand flag: "
	if s := err.Error(); strings.HasPrefix(s, unknown) {
		if _, arg, ok := strings.Cut(s, " in "); ok && isNegative(arg) {
			return usagef("%s: turns are numbered from 0 (`ckpt list` shows them), got %s", cmd.Name(), arg)
		}
	}
	return usageError{err}
}

// isNegative reports whether s is a negative number, as TURN or
// TURN.STEP would be written: "-1", "-2.3".
func isNegative(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == s || digits == "" {
		return false
	}
	for _, r := range digits {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// resolveGlobals fills the global flags' defaults from the environment.
func (a *app) resolveGlobals(cmd *cobra.Command) error {
	f := cmd.Flags()
	if a.workspace == "" && !f.Changed("workspace") {
		a.workspace = os.Getenv("CKPT_WORKSPACE")
	} else if a.workspace == "" {
		return usagef("--workspace needs a directory")
	}
	if a.session == "" && !f.Changed("session") {
		a.session = os.Getenv("CKPT_SESSION")
	}
	a.named = a.session != "" || f.Changed("session")
	if a.named {
		if !controller.ValidSession(a.session) {
			return usageError{fmt.Errorf("session %q: %w", a.session, controller.ErrBadSession)}
		}
	}
	if a.store == "" {
		a.store = defaultStore()
	}
	if a.store == "" {
		return usagef("no store directory: set --store, $CKPT_HOME or $HOME")
	}
	return nil
}

func defaultStore() string {
	if d := os.Getenv("CKPT_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ckpt")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "ckpt")
	}
	return ""
}

// parseTurn parses a TURN argument.
// parsePoint reads TURN or TURN.STEP (a usage error otherwise).
func parsePoint(s string) (controller.Target, error) {
	var p controller.Target
	if err := p.UnmarshalText([]byte(s)); err != nil {
		return controller.Target{}, usageError{err}
	}
	return p, nil
}

func parseTurn(s string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != s {
		return 0, usagef("turn must be a whole number ≥ 0, got %q", s)
	}
	return n, nil
}

// exactArgs is cobra.ExactArgs with a usage error and a clearer message.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (see %s --help)", strings.TrimPrefix(cmd.CommandPath(), "ckpt "), what, cmd.CommandPath())
		}
		return nil
	}
}
