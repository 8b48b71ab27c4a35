package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/internal/msg"
	"github.com/ckpt/ckpt/retention"
	"github.com/spf13/cobra"
)

// The CLI's errors: which exit code each ends with (run maps them, in one
// place), and what to do about the library errors people can act on.

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
	a.say("%s", msg.OneLine(err))
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

// hinted is an error with what to do about it appended for people.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() + " (" + h.hint + ")" }
func (h hinted) Unwrap() error { return h.err }

// storeHint adds what to do to the store errors people can act on: the
// libraries say what happened, the CLI which command helps.
func storeHint(err error) error {
	var noIndex *retention.NoIndexError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, retention.ErrPinned):
		return hinted{err, "unpin them, or use --force"}
	case errors.As(err, &noIndex):
		return hinted{err, "restore it, or remove the session with `ckpt sessions rm " + noIndex.Session + " --force`"}
	}
	return err
}

// withStoreHints wraps a command's run function with storeHint.
func withStoreHints(run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error { return storeHint(run(cmd, args)) }
}
