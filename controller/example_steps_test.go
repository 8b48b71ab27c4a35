package controller_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/controller"
)

// A hook opens a step for each tool call before capturing what the call
// writes; RewindTo goes back to just before one of them (code only).
func ExampleController_RewindTo() {
	ctx := context.Background()
	ws, _ := os.MkdirTemp("", "ckpt-ws-")
	store, _ := os.MkdirTemp("", "ckpt-store-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(store)
	path := filepath.Join(ws, "notes.txt")
	os.WriteFile(path, []byte("v0\n"), 0o644)

	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.BeginTurn(ctx, "edit the notes twice")
	for i, text := range []string{"v1\n", "v2\n"} {
		st, err := c.BeginStep(ctx, controller.StepOptions{Key: fmt.Sprintf("toolu_%d", i), Tool: "Edit"})
		if err != nil {
			log.Fatal(err)
		}
		c.CaptureIn(ctx, st, path)
		os.WriteFile(path, []byte(text), 0o644)
	}

	p, _ := controller.ParsePoint("0.2") // turn 0, before its 2nd tool call
	res, err := c.RewindTo(ctx, p, controller.ScopeCode, controller.RewindOptions{})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Printf("rewound to %d.%d: restored %v, notes.txt %q\n", res.Turn, res.Step, res.Restored, b)
	_, err = c.RewindTo(ctx, p, controller.ScopeBoth, controller.RewindOptions{})
	fmt.Println(err)
	// Output:
	// rewound to 0.2: restored [notes.txt], notes.txt "v1\n"
	// controller: rewind to 0.2: a step rewinds code only: rewind the turn for its conversation
}
