package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt/ckpt/internal/quote"
	"github.com/spf13/cobra"
)

func newDemoCmd(a *app) *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play a short scripted agent session in a temp workspace and rewind it every way",
		Long: `Play a three-turn agent session in a fresh temporary workspace (editing,
creating and deleting files), then show the checkpoints, a diff, a rewind with
each scope and an undo after each, printing the files at every step. Each step
is a real ckpt command, shown as you would type it. Nothing outside the
temporary directory is touched.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.json {
				return usagef("demo is a tour for people and has no --json output")
			}
			dir, err := os.MkdirTemp("", "ckpt-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			if err := playDemo(cmd.Context(), a.stdout, dir); err != nil {
				return err
			}
			if keep {
				a.say("kept %s; explore it with: cd %s && ckpt --store %s list", dir,
					quote.Shell(filepath.Join(dir, "workspace")), quote.Shell(filepath.Join(dir, "store")))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary workspace and store afterwards")
	return cmd
}

// demo drives the CLI the way an agent integration and a person would.
type demo struct {
	ctx       context.Context
	out       io.Writer
	ws, store string
	failed    error
}

func playDemo(ctx context.Context, out io.Writer, dir string) error {
	d := &demo{ctx: ctx, out: out, ws: filepath.Join(dir, "workspace"), store: filepath.Join(dir, "store")}
	if err := os.MkdirAll(d.ws, 0o755); err != nil {
		return err
	}
	d.title("A fresh workspace with no git, at " + d.ws + "\n   (store: " + d.store + "; both removed at the end unless --keep).\n   The agent gets three prompts; before each edit its tool calls `ckpt capture`.\n   Commands run in the workspace, as an agent's hooks would.")

	d.turn("Create a greeting module")
	d.write("hello.py", "def greet(name):\n    return 'Hello ' + name\n")
	d.write("README.md", "# Greeter\n\nCall greet(name).\n")

	d.turn("Make the greeting friendlier and add a test")
	d.write("hello.py", "def greet(name):\n    return f'Hello, {name}! Nice to see you.'\n")
	d.write("tests/test_hello.py", "from hello import greet\n\ndef test_greet():\n    assert 'Ada' in greet('Ada')\n")
	d.ckpt("message", "assistant", "Made greet friendlier and added tests/test_hello.py.")

	d.turn("The README is outdated, delete it and shout the greeting")
	d.remove("README.md")
	d.write("hello.py", "def greet(name):\n    return f'HELLO, {name.upper()}!'\n")
	d.files()

	d.title("The checkpoints: + created, ~ modified, - deleted, = unchanged by that turn.")
	d.ckpt("list")
	d.title("What would rewinding the code to turn 1 change? Read it as current → after the rewind:\n   - lines go away, + lines come back.")
	d.ckpt("diff", "1")

	d.title("Rewind only the code to turn 1: README.md comes back, hello.py is as turn 1 found it.")
	d.ckpt("rewind", "1", "--scope", "code")
	d.files()
	d.title("Undo: every file is back exactly as before the rewind.")
	d.ckpt("undo")
	d.files()

	d.title("Rewind only the conversation to turn 1: turns 1 and 2 leave the history, turn 1's prompt comes back.")
	d.ckpt("rewind", "1", "--scope", "conversation")
	d.ckpt("log")
	d.ckpt("undo")

	d.title("Rewind both to turn 0: the workspace is empty again and so is the conversation.")
	d.ckpt("rewind", "0", "--scope", "both")
	d.files()
	d.ckpt("log")
	d.title("And undo once more: nothing was lost.")
	d.ckpt("undo")
	d.files()
	d.ckpt("log")
	return d.failed
}

func (d *demo) title(s string) {
	if d.failed == nil {
		fmt.Fprintf(d.out, "\n== %s\n", s)
	}
}

// ckpt runs one CLI command against the demo workspace, echoing it.
func (d *demo) ckpt(args ...string) { d.ckptShown(args, args) }

// ckptShown runs args and echoes shown, which spells paths relative to the
// workspace the way an agent running there would.
func (d *demo) ckptShown(args, display []string) {
	if d.failed != nil {
		return
	}
	shown := make([]string, len(display))
	for i, s := range display {
		if strings.ContainsAny(s, " '!") {
			s = "'" + s + "'"
		}
		shown[i] = s
	}
	fmt.Fprintf(d.out, "$ ckpt %s\n", strings.Join(shown, " "))
	full := append([]string{"--workspace", d.ws, "--store", d.store}, args...)
	if code := run(d.ctx, full, strings.NewReader(""), d.out, d.out); code != exitOK {
		d.failed = fmt.Errorf("demo: ckpt %s exited %d", strings.Join(args, " "), code)
	}
}

func (d *demo) turn(prompt string) {
	d.title(fmt.Sprintf("User: %q", prompt))
	d.ckpt("turn", prompt)
}

// write is the agent's edit tool: capture, then write.
func (d *demo) write(rel, content string) {
	d.ckptShown([]string{"capture", filepath.Join(d.ws, rel)}, []string{"capture", rel})
	if d.failed != nil {
		return
	}
	p := filepath.Join(d.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
		err = os.WriteFile(p, []byte(content), 0o644)
		d.fail(err)
	} else {
		d.fail(err)
	}
	fmt.Fprintf(d.out, "  (agent writes %s)\n", rel)
}

// remove is the agent's delete tool: capture, then delete.
func (d *demo) remove(rel string) {
	d.ckptShown([]string{"capture", filepath.Join(d.ws, rel)}, []string{"capture", rel})
	if d.failed != nil {
		return
	}
	d.fail(os.Remove(filepath.Join(d.ws, rel)))
	fmt.Fprintf(d.out, "  (agent deletes %s)\n", rel)
}

func (d *demo) fail(err error) {
	if err != nil && d.failed == nil {
		d.failed = fmt.Errorf("demo: %w", err)
	}
}

// files prints every file in the workspace with its first line.
func (d *demo) files() {
	if d.failed != nil {
		return
	}
	var paths []string
	err := filepath.WalkDir(d.ws, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			rel, _ := filepath.Rel(d.ws, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	d.fail(err)
	sort.Strings(paths)
	fmt.Fprintln(d.out, "  workspace now:")
	if len(paths) == 0 {
		fmt.Fprintln(d.out, "    (empty)")
	}
	for _, p := range paths {
		b, _ := os.ReadFile(filepath.Join(d.ws, p))
		first, _, _ := strings.Cut(string(b), "\n")
		if p == "hello.py" {
			_, second, _ := strings.Cut(string(b), "\n")
			first, _, _ = strings.Cut(strings.TrimSpace(second), "\n")
		}
		fmt.Fprintf(d.out, "    %-22s %s\n", p, first)
	}
}
