package main

import (
	"context"
	"errors"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/wire"
)

// claudeRewound reports a conversation rewind of a Claude Code session
// with the command p planned (hook.PlanRewind), and runs it when p says
// to.
func (a *app) claudeRewound(ctx context.Context, res controller.Result, p *hook.RewindPlan) error {
	r := p.Resume
	// Paths the rewind skipped make it exit 1, once the command that
	// gives Claude's conversation back is printed (and run).
	skipped := wire.NewResult(res).Incomplete("rewind")
	if a.json {
		j := resultJSON(res)
		j.ClaudeResume = &r
		if err := a.printJSON(j); err != nil {
			return err
		}
	} else {
		if err := a.printResult(res, "rewind"); err != nil && !errors.Is(err, wire.ErrIncomplete) {
			return err
		}
		r.WriteText(a.stderr, res.Turn)
	}
	// On a terminal, the fork then takes it over (paths the rewind
	// skipped were listed above).
	if err := p.Run(ctx, a.stdin, a.stdout, a.stderr); err != nil {
		return err
	}
	return skipped
}
