package main

import (
	"context"
	"errors"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
)

// claudeRewound reports a conversation rewind of a Claude Code session
// with the command p planned (hook.PlanRewind), and runs it when p says
// to.
func (a *app) claudeRewound(ctx context.Context, res controller.Result, p *hook.RewindPlan) error {
	r := p.Resume
	// Paths the rewind skipped make it exit 1, once the command that
	// gives Claude's conversation back is printed (and run).
	skipped := incomplete(res, "rewind")
	if a.json {
		j := resultJSON(res)
		j.ClaudeResume = &r
		if err := a.printJSON(j); err != nil {
			return err
		}
	} else {
		if err := a.printResult(res, "rewind"); err != nil && !errors.Is(err, errIncomplete) {
			return err
		}
		if r.Exact {
			a.say("Claude Code's conversation at turn %d (a fork: its original transcript is left as it is), resending the prompt:", res.Turn)
		} else {
			a.say("ckpt has no record of where turn %d began in Claude's transcript (installed later?); this forks the whole conversation, paste the prompt above:", res.Turn)
		}
		a.say("  %s", r.Command)
		a.say("then continue it with: %s", r.Then)
	}
	// On a terminal, the fork then takes it over (paths the rewind
	// skipped were listed above).
	if err := p.Run(ctx, a.stdin, a.stdout, a.stderr); err != nil {
		return err
	}
	return skipped
}
