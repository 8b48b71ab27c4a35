package controller_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

func TestScanRefusesHomeDirectory(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	t.Setenv("HOME", e.ws)
	if err := e.c.SetMeta(ctx, "scan", "on"); !errors.Is(err, controller.ErrScanRefused) {
		t.Fatalf("scan on in $HOME: %v, want ErrScanRefused", err)
	}
	res, err := e.c.BeginTurn(ctx, "t", controller.TurnOptions{Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned || !strings.Contains(res.Warning, "refused") {
		t.Errorf("turn in $HOME: scanned=%v warning=%q; want no manifest and a warning", res.Scanned, res.Warning)
	}
}

func TestScanOverBudgetWarnsAndCaptureStillWorks(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for i := 0; i < 20; i++ {
		e.write(string(rune('a'+i))+"/f.txt", "x")
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, Scan: capture.ScanOptions{Budget: time.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.BeginTurn(ctx, "t", controller.TurnOptions{Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned || !strings.Contains(res.Warning, "budget") {
		t.Fatalf("scanned=%v warning=%q; want no manifest and one warning", res.Scanned, res.Warning)
	}
	e.edit("a/f.txt", "y")
	if _, err := c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a/f.txt", "x")
}

func TestScanAndCaptureCombineEarliestWins(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.write("a.txt", "a0")
	e.write("b.txt", "b0")
	if _, err := e.c.BeginTurn(ctx, "t0", controller.TurnOptions{Scan: true}); err != nil {
		t.Fatal(err)
	}
	e.write("b.txt", "b1 by the shell") // not captured
	e.edit("a.txt", "a1")
	e.turn("t1") // not scanned
	e.edit("a.txt", "a2")
	e.write("new.txt", "shell made me")
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a0")
	e.want("b.txt", "b0")
	e.want("new.txt", "<absent>")
}
