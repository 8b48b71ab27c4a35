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
// writes; Rewind to a Target with a Step goes back to just before one of them (code only).
func ExampleController_Rewind_step() {
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
	c.BeginTurn(ctx, "edit the notes twice", controller.TurnOptions{})
	for i, text := range []string{"v1\n", "v2\n"} {
		st, err := c.BeginStep(ctx, controller.StepOptions{Key: fmt.Sprintf("toolu_%d", i), Tool: "Edit"})
		if err != nil {
			log.Fatal(err)
		}
		c.Capture(ctx, controller.CaptureOptions{Paths: []string{path}, Step: &st})
		os.WriteFile(path, []byte(text), 0o644)
	}

	var p controller.Target
	p.UnmarshalText([]byte("0.2")) // turn 0, before its 2nd tool call
	res, err := c.Rewind(ctx, p, controller.ScopeCode, controller.RewindOptions{})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Printf("rewound to %d.%d: restored %v, notes.txt %q\n", res.Turn, res.Step, res.Restored, b)
	_, err = c.Rewind(ctx, p, controller.ScopeBoth, controller.RewindOptions{})
	fmt.Println(err)
	// Output:
	// rewound to 0.2: restored [notes.txt], notes.txt "v1\n"
	// controller: rewind to 0.2: a step rewinds code only: rewind the turn for its conversation
}
