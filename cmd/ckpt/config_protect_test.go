package main

import (
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
// writes is configuration ckpt protects (controller.IsConfig): no scan
// records it and no rewind changes it, for every agent there is.
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
			n := 0
			err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(ws, p)
				rel = filepath.ToSlash(rel)
				n++
				if !controller.IsConfig(rel) {
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
