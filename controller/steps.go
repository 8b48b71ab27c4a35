package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ckpt/ckpt/checkpoints"
)

// Step is one tool call of a turn: BeginStep opens it, numbered from 1
// within the turn, and it lists the paths it touched first with their
// state just before the call.
type Step = checkpoints.Step

// Target is where a rewind or a diff goes: the start of turn Turn (Step
// 0), or the moment just before its Step-th tool call. It is written "T"
// or "T.S".
type Target struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// String writes p as UnmarshalText reads it.
func (p Target) String() string {
	if p.Step == 0 {
		return strconv.Itoa(p.Turn)
	}
	return fmt.Sprintf("%d.%d", p.Turn, p.Step)
}

// UnmarshalText reads "T" (a turn's start) or "T.S" (turn T just before
// its S-th tool call, S from 1) into p: a target as a user or a request
// writes it (encoding.TextUnmarshaler).
func (p *Target) UnmarshalText(text []byte) error {
	s := string(text)
	t, st, dotted := strings.Cut(s, ".")
	turn, err := strconv.Atoi(t)
	if err != nil || turn < 0 || t != strconv.Itoa(turn) {
		return fmt.Errorf("turn must be a whole number ≥ 0, got %q (TURN or TURN.STEP)", s)
	}
	if !dotted {
		*p = Target{Turn: turn}
		return nil
	}
	step, err := strconv.Atoi(st)
	if err != nil || step < 1 || st != strconv.Itoa(step) {
		return fmt.Errorf("%q: a step is a number from 1 (TURN.STEP; TURN alone is the turn's start)", s)
	}
	*p = Target{Turn: turn, Step: step}
	return nil
}

// StepOptions describe the tool call a step is opened for.
type StepOptions struct {
	// Key is the agent's id of the tool call (Claude Code's tool_use_id):
	// BeginStep with a key the open turn has seen returns that step, so
	// every hook process of one tool call lands in one step. Empty: a new
	// step every time.
	Key string
	// Tool is the tool's name, shown by list --steps.
	Tool string
}

// BeginStep opens the next step of the open turn: an agent is about to
// run a tool. Captures made with the returned step (CaptureOptions.Step),
// or without one until the next step opens, record each path's first
// touch in it. It fails with an error wrapping ErrNoOpenTurn.
// Safe for concurrent use, from several processes too.
func (c *Controller) BeginStep(ctx context.Context, o StepOptions) (Step, error) {
	st, _, err := c.idx.BeginStep(ctx, o.Key, o.Tool)
	if err != nil {
		return Step{}, fmt.Errorf("controller: %w", err)
	}
	return st, nil
}
