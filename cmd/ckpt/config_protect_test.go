package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/controller"
)

// TestInstallWritesOnlyProtectedConfig installs every agent's hooks in a
// project with the real binary and checks that each file the install
// writes is configuration ckpt protects: capture refuses it as it refuses
// .git (ErrVCSDir), so no scan records it and no rewind changes it, for
// every agent there is.
func TestInstallWritesOnlyProtectedConfig(t *testing.T) {
	bin := ckptBinary(t)
	for _, name := range agent.Names() {
		t.Run(name, func(t *testing.T) {
			ws, store := t.TempDir(), t.TempDir()
			cmd := exec.Command(bin, "install", name, "--no-scan")
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), "CKPT_HOME="+store, "HOME="+t.TempDir(), "CKPT_WORKSPACE=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ckpt install %s: %v\n%s", name, err, out)
			}
			c, err := controller.Open(t.Context(), controller.Options{Workspace: ws, Store: t.TempDir(), NoAutoRetention: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.BeginTurn(t.Context(), "after install", controller.TurnOptions{}); err != nil {
				t.Fatal(err)
			}
			n := 0
			err = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(ws, p)
				rel = filepath.ToSlash(rel)
				n++
				if _, errs := c.Capture(t.Context(), controller.CaptureOptions{Paths: []string{p}}); !errors.Is(errs[0], controller.ErrVCSDir) {
					t.Errorf("ckpt install %s wrote %s, which capture does not protect (add it to capture's configPaths)", name, rel)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("ckpt install %s wrote nothing in the project", name)
			}
		})
	}
}
