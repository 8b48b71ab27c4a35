package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/controller"
)

// TestConcurrentTurnsKeepEndStates is issue 10's 9b: processes opening
// turns at once (agent hooks do) each read the open turn's end states and
// then open the next turn. Read outside the write, the end states one
// worker read for turn T could land on turn T+1 that another had just
// opened, recording for a path of T+1 a state from before T+1 captured it.
//
// Workers, each with its own Controller (own index and blob handles, as
// separate processes have), loop: capture their own file, write it anew
// ("w<i> <k>", k rising), open a turn. A file's contents only move forward,
// so every end state recorded for a snapshot must be the snapshot's own
// content or a later one, never an earlier one.
func TestConcurrentTurnsKeepEndStates(t *testing.T) {
	const workers, rounds = 4, 40
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	open := func() *controller.Controller {
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "race"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first := open()
	if _, err := first.BeginTurn(ctx, "start", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	ctls := make([]*controller.Controller, workers)
	for i := range ctls {
		ctls[i] = open()
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("w%d.txt", i)), []byte(fmt.Sprintf("w%d 0", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i, c := range ctls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d.txt", i)
			for k := 1; k <= rounds; k++ {
				if _, cerrs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{name}}); cerrs[0] != nil {
					errs <- cerrs[0]
					return
				}
				// Written aside and renamed in, so no reader sees it half written.
				tmp := filepath.Join(ws, name+".tmp")
				if err := os.WriteFile(tmp, []byte(fmt.Sprintf("w%d %d", i, k)), 0o644); err != nil {
					errs <- err
					return
				}
				if err := os.Rename(tmp, filepath.Join(ws, name)); err != nil {
					errs <- err
					return
				}
				if _, err := c.BeginTurn(ctx, fmt.Sprintf("w%d round %d", i, k), controller.TurnOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	blobs, err := cas.OpenDisk(ctx, filepath.Join(store, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	// version reads the k of "w<i> <k>" from a blob.
	version := func(id *cas.ID) int {
		t.Helper()
		b, err := blobs.Get(ctx, *id)
		if err != nil {
			t.Fatal(err)
		}
		_, k, _ := strings.Cut(string(b), " ")
		n, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("blob %q is no version", b)
		}
		return n
	}
	cps, _, err := first.Checkpoints(ctx, controller.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != workers*rounds+1 {
		t.Fatalf("%d turns, want %d", len(cps), workers*rounds+1)
	}
	ends := 0
	for _, cp := range cps {
		for _, f := range cp.Files {
			if f.End == nil || f.Content == nil || f.End.Content == nil {
				continue
			}
			ends++
			if start, end := version(f.Content), version(f.End.Content); end < start {
				t.Errorf("turn %d %s: end state is version %d, older than the version %d the turn captured: another turn's end states",
					cp.Turn, f.Path, end, start)
			}
		}
	}
	if ends < workers*rounds/2 {
		t.Errorf("only %d snapshots have an end state; the test checks too little", ends)
	}
}
