package controller_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// TestAutoRetentionUsesTheClock: the daily sweep at Open judges ages by
// Options.Clock. Sixty days on, turn 0 is past the default 30-day age and
// is pruned; the session itself, unused for as long, is the one being
// opened, so it is kept (it used to be removed under the open Controller).
func TestAutoRetentionUsesTheClock(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.turn("old")
	e.edit("a.txt", "a1")
	e.turn("also old")
	e.edit("a.txt", "a2")
	e.c.Close()
	later := func() time.Time { return time.Now().Add(60 * 24 * time.Hour) }
	c, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, Clock: later})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 2 || !cps[0].Pruned || cps[1].Pruned {
		t.Fatalf("turns after Open 60 days on: %+v; want turn 0 pruned by the daily sweep, turn 1 kept", cps)
	}
	st := controller.OpenStore(e.store)
	defer st.Close()
	if has, _ := checkpoints.HasSession(e.store, c.Session()); !has {
		t.Fatal("the daily sweep removed the session being opened")
	}
}

// TestAutoRetentionFailureIsLogged: automatic retention never fails the
// call that triggered it, but its failure reaches Options.Logger.
func TestAutoRetentionFailureIsLogged(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(store, "config.json"), []byte(`{"max_age": "soon"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Logger: log})
	if err != nil {
		t.Fatalf("Open with a bad retention config: %v; want it to succeed", err)
	}
	defer c.Close()
	if got := buf.String(); !strings.Contains(got, "automatic retention") || !strings.Contains(got, "config") {
		t.Errorf("log %q; want the automatic retention failure, naming the config", got)
	}
}

// TestRetainDryRun: Retain with DryRun returns the plan the policy makes
// and changes nothing (a second dry run plans the same); the same call
// without it prunes what the plan said, after which a dry run plans
// nothing.
func TestRetainDryRun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, p := range []string{"one", "two", "three"} {
		e.turn(p)
		e.edit("f.txt", p)
	}
	p := keepTurns(1, e.c.Session())
	planned := func() int {
		t.Helper()
		dry := p
		dry.DryRun = true
		plan, rep, err := e.c.Store().Retain(ctx, dry)
		if err != nil {
			t.Fatal(err)
		}
		if rep != (retention.GCReport{}) {
			t.Errorf("dry run collected: %+v", rep)
		}
		return len(plan.Prunes()[e.c.Session()])
	}
	if n := planned(); n != 2 {
		t.Errorf("dry run plans %d prunes, want 2", n)
	}
	if n := planned(); n != 2 {
		t.Errorf("second dry run plans %d prunes, want 2: the first changed the store", n)
	}
	plan, _, err := e.c.Store().Retain(ctx, p)
	if err != nil || len(plan.Prunes()[e.c.Session()]) != 2 {
		t.Fatalf("retain: %v, plan %s", err, plan)
	}
	if n := planned(); n != 0 {
		t.Errorf("dry run after retain plans %d prunes, want 0", n)
	}
}

// keepTurns is the policy that keeps session's newest n turns (every
// session's, for ""), with no age limit, whatever the store's defaults.
func keepTurns(n int, session string) controller.RetainOptions {
	return controller.RetainOptions{KeepTurns: &n, MaxAge: "0", Session: session}
}

// TestRetainOptions: an override that does not parse fails naming its
// config key, changing nothing; CollectOnly collects without the policy
// (a zero Plan), and refuses a dry run, which it has not.
func TestRetainOptions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for _, p := range []string{"one", "two"} {
		e.turn(p)
		e.edit("f.txt", p)
	}
	st := e.c.Store()
	if _, _, err := st.Retain(ctx, controller.RetainOptions{MaxAge: "soon", KeepTurns: new(int)}); err == nil || !strings.Contains(err.Error(), "max_age") {
		t.Errorf("max age soon: %v; want an error naming max_age", err)
	}
	if _, _, err := st.Retain(ctx, controller.RetainOptions{CollectOnly: true, DryRun: true}); err == nil {
		t.Error("a dry run of collection did not fail")
	}
	plan, rep, err := st.Retain(ctx, controller.RetainOptions{CollectOnly: true})
	if err != nil || len(plan.Prunes()) != 0 || len(plan.Removes()) != 0 || rep.Live == 0 {
		t.Errorf("collect only: plan %s, %+v, %v; want no plan and the live blobs kept", plan, rep, err)
	}
	if cps, _, err := e.c.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err != nil || len(cps) != 2 || cps[0].Pruned {
		t.Errorf("turns after a failed retain and a collection: %+v, %v; want both, unpruned", cps, err)
	}
}
