package controller_test

// The model test's drivers: the steps of model_test.go run either through
// the Controller in this process (apiDriver) or through the real ckpt
// binary (cliDriver), one process per command with --json, its outcome
// read back from stdout and its refusal from the one-line stderr message.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// driver runs the model test's steps against the product.
type driver interface {
	Capture(p string) (recorded bool, err error)
	// Step opens a step of the open turn (a tool call) with key, and
	// returns its number; captures go into it from then on.
	Step(key string) (int, error)
	RewindTo(p controller.Target, scope checkpoints.Scope, o controller.RewindOptions) (controller.Result, error)
	BeginTurn(prompt string, scan bool) (int, error)
	Message(text string) error
	Rewind(n int, scope checkpoints.Scope, o controller.RewindOptions) (controller.Result, error)
	Revert(n int, o controller.RewindOptions) (controller.Result, error)
	Undo(redo bool, o controller.RewindOptions) (controller.Result, error)
	Summarize(n int, dir direction, text string) error
	// Fork's Result has Skipped nil when the driver cannot tell them.
	Fork(n int, id string, restore, force bool) (controller.Result, error)
	// ConversationOf is the active conversation of a session ("" for the
	// driven one), one "TURN ROLE TEXT" string per message.
	ConversationOf(session string) ([]string, error)
	History() ([]controller.HistoryEntry, error)
	// Status is what changed since the open turn started.
	Status() ([]controller.Change, error)
	Pin(n int) error
	// Prune keeps the newest keep turns of the driven session, then
	// collects with no grace.
	Prune(keep int) error
	GC() error
	Switch(session string) // drive another session from now on
	Reopen()
	Close()
}

// --- the Controller ---

type apiDriver struct {
	t                 testing.TB
	ctx               context.Context
	ws, store, sessID string
	c                 *controller.Controller
	step              *controller.Step // the last step opened: captures go into it (CaptureIn)
	scan              capture.ScanOptions
}

func newAPIDriver(t testing.TB, ws, store string) *apiDriver {
	d := &apiDriver{t: t, ctx: context.Background(), ws: ws, store: store}
	d.Reopen()
	return d
}

func (d *apiDriver) Reopen() {
	d.Close()
	c, err := controller.Open(d.ctx, controller.Options{Workspace: d.ws, Store: d.store, Session: d.sessID, NoAutoRetention: true, Scan: d.scan})
	if err != nil {
		d.t.Fatal(err)
	}
	d.c = c
}

func (d *apiDriver) Close() {
	if d.c != nil {
		d.c.Close()
		d.c = nil
	}
}

func (d *apiDriver) Switch(id string) { d.sessID = id; d.step = nil; d.Reopen() }

func (d *apiDriver) Capture(p string) (bool, error) {
	// As a hook does: with a step, into the step its tool call opened
	// (the open turn's latest, if that step's turn is no longer open).
	res, errs := d.c.Capture(d.ctx, controller.CaptureOptions{Paths: []string{p}, Step: d.step})
	return res[0].Recorded, errs[0]
}

func (d *apiDriver) Step(key string) (int, error) {
	st, err := d.c.BeginStep(d.ctx, controller.StepOptions{Key: key, Tool: "Edit"})
	if err != nil {
		return 0, err
	}
	d.step = &st
	return st.Number, nil
}

func (d *apiDriver) RewindTo(p controller.Target, scope checkpoints.Scope, o controller.RewindOptions) (controller.Result, error) {
	return d.c.Rewind(d.ctx, p, scope, o)
}

func (d *apiDriver) BeginTurn(prompt string, scan bool) (int, error) {
	res, err := d.c.BeginTurn(d.ctx, prompt, controller.TurnOptions{Scan: scan})
	return res.Turn, err
}

func (d *apiDriver) Message(text string) error {
	_, err := d.c.AppendMessage(d.ctx, "assistant", text)
	return err
}

func (d *apiDriver) Rewind(n int, scope checkpoints.Scope, o controller.RewindOptions) (controller.Result, error) {
	return d.c.Rewind(d.ctx, controller.Target{Turn: n}, scope, o)
}

func (d *apiDriver) Revert(n int, o controller.RewindOptions) (controller.Result, error) {
	o.Revert = true
	return d.c.Rewind(d.ctx, controller.Target{Turn: n}, controller.ScopeCode, o)
}

func (d *apiDriver) Undo(redo bool, o controller.RewindOptions) (controller.Result, error) {
	if redo {
		return d.c.Redo(d.ctx, o)
	}
	return d.c.Undo(d.ctx, o)
}

func (d *apiDriver) Summarize(n int, dir direction, text string) error {
	_, err := d.c.Summarize(d.ctx, n, bool(dir), text)
	return err
}

func (d *apiDriver) Fork(n int, id string, restore, force bool) (controller.Result, error) {
	res, err := d.c.Fork(d.ctx, n, controller.ForkOptions{To: id, Restore: restore, Force: force})
	return res, err
}

func convStrings(msgs []checkpoints.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%d %s %s", m.Turn, m.Role, m.Text))
	}
	return out
}

func (d *apiDriver) ConversationOf(session string) ([]string, error) {
	if session == "" {
		msgs, err := d.c.Conversation(d.ctx)
		return convStrings(msgs), err
	}
	c, err := controller.Open(d.ctx, controller.Options{Workspace: d.ws, Store: d.store, Session: session, NoAutoRetention: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	msgs, err := c.Conversation(d.ctx)
	return convStrings(msgs), err
}

func (d *apiDriver) History() ([]controller.HistoryEntry, error) { return d.c.History(d.ctx) }

func (d *apiDriver) Pin(n int) error { return d.c.Pin(d.ctx, n, true, "") }

func (d *apiDriver) Status() ([]controller.Change, error) { return d.c.Status(d.ctx) }

func (d *apiDriver) Prune(keep int) error {
	_, _, err := controller.StoreOf(d.c).Retain(d.ctx, keepTurns(keep, d.c.Session()))
	return err
}

func (d *apiDriver) GC() error {
	_, _, err := controller.StoreOf(d.c).Retain(d.ctx, controller.RetainOptions{CollectOnly: true})
	return err
}

// --- the ckpt binary ---

// buildCkpt builds cmd/ckpt into a temporary directory of t: once per
// TestModelCLI run.
func buildCkpt(t testing.TB) string {
	bin := filepath.Join(t.TempDir(), "ckpt")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/ckpt/ckpt/cmd/ckpt").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type cliDriver struct {
	t                      testing.TB
	bin, ws, store, sessID string
}

func newCLIDriver(t testing.TB, bin, ws, store string) *cliDriver {
	return &cliDriver{t: t, bin: bin, ws: ws, store: store, sessID: "model"}
}

// A refusal the model tells apart: matched in the binary's one-line
// stderr message by its words, and the sentinel it is (nil: none, errKind
// reads the words).
type refusal struct {
	words string
	is    error
}

// refusals are the refusals the model tells apart, the variants of a
// sentinel before the sentinel.
var refusals = append([]refusal{
	{undoConflictWords, controller.ErrConflict}, {redoConflictWords, controller.ErrConflict},
	{laterChangesWords, nil}, {nothingToRedoWords, controller.ErrNothingToUndo}, {notReversibleWords, controller.ErrNotInEffect},
}, sentinelRefusals(
	controller.ErrConflict, controller.ErrNoTurn, controller.ErrNoStep, controller.ErrStepScope, controller.ErrNotInEffect,
	checkpoints.ErrPruned, checkpoints.ErrNothingToUndo, capture.ErrOutsideWorkspace, checkpoints.ErrNoOpenTurn,
	capture.ErrSymlink, capture.ErrNotRegular,
)...)

// sentinelRefusals are the refusals the sentinels' own words name.
func sentinelRefusals(errs ...error) []refusal {
	out := make([]refusal, len(errs))
	for i, e := range errs {
		out[i] = refusal{e.Error(), e}
	}
	return out
}

// run runs ckpt with args in the workspace; the JSON on stdout goes into
// out. A failure is an error wrapping the sentinel its message names.
func (d *cliDriver) run(session string, out any, args ...string) error {
	if session == "" {
		session = d.sessID
	}
	full := append([]string{"--json", "--workspace", d.ws, "--store", d.store, "--session", session}, args...)
	cmd := exec.Command(d.bin, full...)
	cmd.Dir = d.ws
	cmd.Env = append(os.Environ(), "CKPT_HOME="+d.store, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		// A conversation scope with a step is a usage error (exit 2).
		usage := strings.Contains(msg, controller.ErrStepScope.Error())
		if !errors.As(err, &ee) || ee.ExitCode() != map[bool]int{false: 1, true: 2}[usage] || !strings.HasPrefix(msg, "ckpt: ") || strings.Contains(msg, "\n") {
			return fmt.Errorf("ckpt %s: %v, stderr %q (want exit 1 and one line)", strings.Join(args, " "), err, msg)
		}
		if strings.Contains(msg, turnHiddenWords) {
			// A hidden turn is no turn of the active history, said
			// without "no such turn".
			return fmt.Errorf("%s: %w", msg, controller.ErrNoTurn)
		}
		for _, r := range refusals {
			if strings.Contains(msg, r.words) && r.is == nil {
				return errors.New(msg)
			}
			if strings.Contains(msg, r.words) {
				return fmt.Errorf("%s: %w", msg, r.is)
			}
		}
		if strings.Contains(msg, "left as they are (see skipped)") && out != nil {
			// A rewind, revert, undo or redo that skipped paths: done,
			// its result printed, and exit 1.
			if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
				return fmt.Errorf("ckpt %s: stdout is not JSON: %v: %q", strings.Join(args, " "), err, stdout.String())
			}
			return fmt.Errorf("%s: %w", msg, errSkippedExit)
		}
		return errors.New(msg)
	}
	if out != nil {
		if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
			return fmt.Errorf("ckpt %s: stdout is not JSON: %v: %q", strings.Join(args, " "), err, stdout.String())
		}
	}
	return nil
}

func (d *cliDriver) Reopen()          {}
func (d *cliDriver) Close()           {}
func (d *cliDriver) Switch(id string) { d.sessID = id }
func (d *cliDriver) GC() error        { return d.run("", nil, "gc", "--grace", "0s") }
func (d *cliDriver) Pin(n int) error  { return d.run("", nil, "pin", strconv.Itoa(n)) }
func (d *cliDriver) Status() ([]controller.Change, error) {
	var out []controller.Change
	err := d.run("", &out, "status")
	return out, err
}
func (d *cliDriver) Message(t string) error {
	return d.run("", nil, "message", "assistant", t)
}

func (d *cliDriver) Capture(p string) (bool, error) {
	var out []struct {
		Recorded bool `json:"recorded"`
	}
	if err := d.run("", &out, "capture", p); err != nil {
		return false, err
	}
	if len(out) != 1 {
		return false, fmt.Errorf("capture printed %d results", len(out))
	}
	return out[0].Recorded, nil
}

func (d *cliDriver) Step(key string) (int, error) {
	args := []string{"step", "--tool", "Edit"}
	if key != "" {
		args = append(args, key)
	}
	var out struct {
		Turn int `json:"turn"`
		Step int `json:"step"`
	}
	err := d.run("", &out, args...)
	return out.Step, err
}

func (d *cliDriver) RewindTo(p controller.Target, scope checkpoints.Scope, o controller.RewindOptions) (controller.Result, error) {
	args := append([]string{"rewind", p.String(), "--scope", string(scope)}, rewindFlags(o)...)
	if len(o.Only) > 0 {
		args = append(append(args, "--only"), o.Only...)
	}
	return d.result(args...)
}

func (d *cliDriver) BeginTurn(prompt string, scan bool) (int, error) {
	args := []string{"turn", prompt}
	if scan {
		args = append(args, "--scan")
	}
	var out struct {
		Turn int `json:"turn"`
	}
	err := d.run("", &out, args...)
	return out.Turn, err
}

// errSkippedExit is the exit 1 of a command that did its work but skipped
// paths (see result).
var errSkippedExit = errors.New("skipped paths")

// result runs a rewind, revert, undo or redo. One that skipped paths
// exits 1 (unless a dry run) after printing its result, and only then.
func (d *cliDriver) result(args ...string) (controller.Result, error) {
	var res controller.Result
	err := d.run("", &res, args...)
	skipExit := errors.Is(err, errSkippedExit)
	if want := len(res.Skipped) > 0 && !res.DryRun; (err == nil || skipExit) && skipExit != want {
		return res, fmt.Errorf("ckpt %s: exit 1 for skipped paths %v, want %v (skipped %v)", strings.Join(args, " "), skipExit, want, res.Skipped)
	}
	if skipExit {
		err = nil
	}
	return res, err
}

func rewindFlags(o controller.RewindOptions) []string {
	var args []string
	if o.Force {
		args = append(args, "--force")
	}
	if o.DryRun {
		args = append(args, "--dry-run")
	}
	return args
}

func (d *cliDriver) Rewind(n int, scope checkpoints.Scope, o controller.RewindOptions) (controller.Result, error) {
	args := append([]string{"rewind", strconv.Itoa(n), "--scope", string(scope)}, rewindFlags(o)...)
	if len(o.Only) > 0 {
		args = append(append(args, "--only"), o.Only...)
	}
	return d.result(args...)
}

func (d *cliDriver) Revert(n int, o controller.RewindOptions) (controller.Result, error) {
	return d.result(append([]string{"revert", strconv.Itoa(n)}, rewindFlags(o)...)...)
}

func (d *cliDriver) Undo(redo bool, o controller.RewindOptions) (controller.Result, error) {
	args := []string{"undo"}
	if redo {
		args[0] = "redo"
	}
	args = append(args, rewindFlags(controller.RewindOptions{Force: o.Force, DryRun: o.DryRun})...)
	if o.Op != 0 {
		args = append(args, "--op", strconv.FormatInt(o.Op, 10))
	}
	return d.result(args...)
}

func (d *cliDriver) Summarize(n int, dir direction, text string) error {
	flag := "--from"
	if dir == sumUpTo {
		flag = "--up-to"
	}
	return d.run("", nil, "summarize", strconv.Itoa(n), flag, "--text", text)
}

func (d *cliDriver) Fork(n int, id string, restore, force bool) (controller.Result, error) {
	args := []string{"fork", strconv.Itoa(n), "--to", id}
	if restore {
		args = append(args, "--restore")
	}
	if force {
		args = append(args, "--force")
	}
	var out struct {
		Restored []string `json:"restored"`
		Deleted  []string `json:"deleted"`
	}
	err := d.run("", &out, args...)
	return controller.Result{Restored: out.Restored, Deleted: out.Deleted}, err
}

func (d *cliDriver) ConversationOf(session string) ([]string, error) {
	var out []struct {
		Turn int    `json:"turn"`
		Role string `json:"role"`
		Text string `json:"text"`
	}
	if err := d.run(session, &out, "log"); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("log --json printed null, not []")
	}
	var msgs []string
	for _, m := range out {
		msgs = append(msgs, fmt.Sprintf("%d %s %s", m.Turn, m.Role, m.Text))
	}
	return msgs, nil
}

func (d *cliDriver) History() ([]controller.HistoryEntry, error) {
	// The CLI writes each file's states for people (mode "0644"); the
	// model compares the entries without them.
	var doc []struct {
		controller.HistoryEntry
		Files json.RawMessage `json:"files"`
	}
	err := d.run("", &doc, "history")
	out := make([]controller.HistoryEntry, len(doc))
	for i, e := range doc {
		out[i] = e.HistoryEntry
	}
	return out, err
}

func (d *cliDriver) Prune(keep int) error {
	return d.run("", nil, "prune", "--keep", strconv.Itoa(keep), "--max-age", "0", "--grace", "0s")
}
