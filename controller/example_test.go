package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ckpt/ckpt/controller"
)

// A command-line tool's one-shot: open the store and the session of a
// workspace, open a turn per user prompt, capture each file before the
// agent's tool writes it, rewind to an earlier turn, undo the rewind and
// redo it. (controller.Open does OpenStore and Store.Open in one.)
func Example() {
	ctx := context.Background()
	ws, _ := os.MkdirTemp("", "ckpt-ws-")
	store, _ := os.MkdirTemp("", "ckpt-store-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(store)
	write := func(name, text string) { os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644) }
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if errors.Is(err, os.ErrNotExist) {
			return "(absent)"
		}
		return string(b)
	}

	st := controller.OpenStore(store)
	defer st.Close()
	c, err := st.Open(ctx, controller.Options{Workspace: ws})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	write("main.go", "package main\n")
	// Turn 0: the agent edits main.go. Capture before the write.
	if _, err := c.BeginTurn(ctx, "add a greeting", controller.TurnOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{"main.go"}}); errs[0] != nil {
		log.Fatal(errs[0])
	}
	write("main.go", "package main // hello\n")
	c.AppendMessage(ctx, "assistant", "added a greeting")

	// Turn 1: the agent creates a file.
	c.BeginTurn(ctx, "add a readme", controller.TurnOptions{})
	c.Capture(ctx, controller.CaptureOptions{Paths: []string{"README.md"}}) // absent now: a rewind deletes it
	write("README.md", "# hello\n")

	// Rewind code and conversation to the start of turn 0.
	res, err := c.Rewind(ctx, controller.Target{Turn: 0}, controller.ScopeBoth, controller.RewindOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rewound: restored %v, deleted %v, prompt %q\n", res.Restored, res.Deleted, res.Prompt)
	fmt.Printf("main.go %q, README.md %s\n", read("main.go"), read("README.md"))

	// Every rewind can be undone, and every undo redone.
	if _, err := c.Undo(ctx, controller.RewindOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("undone: main.go %q, README.md %q\n", read("main.go"), read("README.md"))
	if _, err := c.Redo(ctx, controller.RewindOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("redone: README.md %s\n", read("README.md"))
	// Undo walks back: the redo's rewind, then nothing is left.
	undos := 0
	for ; err == nil; undos++ {
		_, err = c.Undo(ctx, controller.RewindOptions{})
	}
	fmt.Println("undos until nothing is left:", undos-1, errors.Is(err, controller.ErrNothingToUndo))

	// Output:
	// rewound: restored [main.go], deleted [README.md], prompt "add a greeting"
	// main.go "package main\n", README.md (absent)
	// undone: main.go "package main // hello\n", README.md "# hello\n"
	// redone: README.md (absent)
	// undos until nothing is left: 1 true
}

// A UI follows a session: it watches from now, reads the state it renders
// when the watch's first event (a "resync") says where it starts, then
// re-renders on each change. Watch reports every change by any process
// (an agent's hooks run in processes of their own), this process's
// included, in commit order.
func ExampleController_Watch() {
	ctx := context.Background()
	ws, _ := os.MkdirTemp("", "ckpt-ws-")
	store, _ := os.MkdirTemp("", "ckpt-store-")
	defer os.RemoveAll(ws)
	defer os.RemoveAll(store)

	ui, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		log.Fatal(err)
	}
	defer ui.Close()
	wctx, stop := context.WithCancel(ctx)
	seen := make(chan controller.Event)
	go ui.Watch(wctx, controller.WatchOptions{After: -1, Interval: 10 * time.Millisecond}, func(e controller.Event) { seen <- e })
	defer stop()
	<-seen // a "resync": the moment to read the state it renders

	// An agent's hook, as another process would: its own Controller.
	hook, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		log.Fatal(err)
	}
	defer hook.Close()
	hook.BeginTurn(ctx, "fix the build", controller.TurnOptions{})
	hook.Capture(ctx, controller.CaptureOptions{Paths: []string{"go.mod"}})
	for range 3 {
		e := <-seen
		fmt.Println(strings.TrimSpace(fmt.Sprint(e.Kind, " ", e.Turn, " ", e.Path)))
	}

	// Output:
	// turn_opened 0
	// message 0
	// captured 0 go.mod
}

// A desktop app keeps one Store open for its life and a Controller per
// session it shows: every Controller opened from the Store shares its one
// blob-store handle. The Store also finds and lists sessions, and applies
// the retention policy, without a workspace.
func ExampleStore_Open() {
	ctx := context.Background()
	store, _ := os.MkdirTemp("", "ckpt-store-")
	defer os.RemoveAll(store)
	st := controller.OpenStore(store)
	defer st.Close()

	// Two projects, and a second session (another agent's) in the first.
	var roots []string
	for range 2 {
		ws, _ := os.MkdirTemp("", "ckpt-ws-")
		defer os.RemoveAll(ws)
		root, _ := controller.WorkspaceRoot(ws)
		roots = append(roots, root)
	}
	open := func(ws, session string) *controller.Controller {
		c, err := st.Open(ctx, controller.Options{Workspace: ws, Session: session})
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	app, agent, other := open(roots[0], ""), open(roots[0], "agent-1"), open(roots[1], "")
	defer app.Close()
	defer agent.Close()
	defer other.Close()
	for i, c := range []*controller.Controller{app, agent, agent, other} {
		os.WriteFile(filepath.Join(c.WorkspaceRoot(), "notes.txt"), []byte(fmt.Sprint(i)), 0o644)
		c.BeginTurn(ctx, fmt.Sprint("prompt ", i), controller.TurnOptions{})
		c.Capture(ctx, controller.CaptureOptions{Paths: []string{"notes.txt"}})
	}

	// Which session of the first project did something last? Resolve,
	// with none named, picks it (and says it did: not the default).
	loc, _ := st.Resolve(ctx, controller.ResolveOptions{Workspace: roots[0]})
	fmt.Println("active in the first project:", loc.Session, loc.Picked)
	// The store's sessions, from any directory: no workspace needed.
	infos, err := st.Sessions(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range infos {
		if s.ID == "agent-1" || s.Workspace == roots[1] {
			fmt.Println(s.ID == "agent-1", s.Turns)
		}
	}
	// A directory below a project finds that project and its session.
	sub := filepath.Join(roots[1], "src")
	os.Mkdir(sub, 0o755)
	loc, _ = st.Resolve(ctx, controller.ResolveOptions{Dir: sub})
	fmt.Println(loc.Found, loc.Workspace == roots[1], loc.Session == other.Session())

	// Output:
	// active in the first project: agent-1 true
	// true 2
	// false 1
	// true true true
}
