package agent

import (
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
)

// TestRegistry: Names lists Claude Code first and the others by name;
// every listed agent is found by Lookup and installs; generic is found
// but not listed.
func TestRegistry(t *testing.T) {
	names := Names()
	if len(names) < 2 || names[0] != "claude" || !slices.IsSorted(names[1:]) {
		t.Fatalf("Names() = %q, want claude first, then sorted", names)
	}
	for i, a := range All() {
		if a.Name() != names[i] {
			t.Errorf("All()[%d] = %s, Names()[%d] = %s", i, a.Name(), i, names[i])
		}
		if got, ok := Lookup(a.Name()); !ok || got.Name() != a.Name() || a.Title() == "" {
			t.Errorf("Lookup(%q) = %v, %v", a.Name(), got, ok)
		}
	}
	if g, ok := Lookup("generic"); !ok || slices.Contains(names, "generic") || g.Install(&Env{}, true) == nil {
		t.Errorf("generic: found %v, listed %v; want found, not listed, nothing to install", ok, slices.Contains(names, "generic"))
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found an agent`)
	}
}

// TestInstallRoundTrip installs every agent's hooks into a workspace with
// an Env that has no callbacks (what a program embedding the package may
// pass), finds them installed, and uninstalls them: no file is left.
func TestInstallRoundTrip(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, a := range All() {
		t.Run(a.Name(), func(t *testing.T) {
			ws := t.TempDir()
			var changes []Change
			env := &Env{Workspace: ws, Command: "ckpt", Exe: "ckpt", Report: func(c Change) error { changes = append(changes, c); return nil }}
			if err := a.Install(env, true); err != nil {
				t.Fatal(err)
			}
			if len(changes) == 0 || len(changes[0].Added) == 0 {
				t.Fatalf("install reported %+v, want what it added", changes)
			}
			if len(a.Markers().Config) > 0 {
				if cmds, _ := Installed(a, ws); len(cmds) != 1 || cmds[0] != "ckpt hook "+a.Name() {
					t.Errorf("Installed = %q, want [ckpt hook %s]", cmds, a.Name())
				}
			}
			if err := a.Install(&Env{Workspace: ws}, false); err != nil {
				t.Fatal(err)
			}
			filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("left after uninstall: %s", p)
				}
				return err
			})
		})
	}
}
