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

// TestUserInstallFound installs every agent's hooks for every project
// (Env.User, into a temporary home directory) and finds them where that
// install wrote them (UserInstalled, what `ckpt install --check` probes),
// and no longer once uninstalled; nothing is found in the workspace.
func TestUserInstallFound(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"CODEX_HOME", "COPILOT_HOME", "PI_CODING_AGENT_DIR", "XDG_CONFIG_HOME"} {
		t.Setenv(v, "")
	}
	for _, a := range All() {
		t.Run(a.Name(), func(t *testing.T) {
			ws := t.TempDir()
			var wrote []string
			env := &Env{Workspace: ws, User: true, Command: "ckpt", Exe: "ckpt", Report: func(c Change) error { wrote = append(wrote, c.Path); return nil }}
			if err := a.Install(env, true); err != nil {
				t.Fatal(err)
			}
			cmds, _, err := UserInstalled(a)
			if err != nil || len(cmds) != 1 || cmds[0] != "ckpt hook "+a.Name() {
				t.Errorf("UserInstalled = %q, %v; want [ckpt hook %s] (install wrote %q)", cmds, err, a.Name(), wrote)
			}
			if cmds, _ := Installed(a, ws); len(cmds) > 0 {
				t.Errorf("Installed in the workspace = %q after a --user install", cmds)
			}
			if err := a.Install(env, false); err != nil {
				t.Fatal(err)
			}
			if cmds, _, _ := UserInstalled(a); len(cmds) > 0 {
				t.Errorf("UserInstalled = %q after uninstall", cmds)
			}
		})
	}
}
