package setup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// TestInstallUninstallReport drives install and uninstall as a program
// embedding the package would: the Report says what changed in each file
// of each agent, what became of the workspace's scan mode (said once),
// and after uninstall which directories install had made went, and that
// scan mode is back as before.
func TestInstallUninstallReport(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOME", t.TempDir())
	ws, err := controller.WorkspaceRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Workspace: ws, Store: t.TempDir(), Exe: filepath.Join(t.TempDir(), "ckpt")}
	r, err := Install(ctx, []string{"claude", "codex", "claude"}, o)
	if err != nil {
		t.Fatal(err)
	}
	var agents, notes []string
	for _, f := range r.Files {
		if !slices.Contains(agents, f.Agent) {
			agents = append(agents, f.Agent)
		}
		if f.Note != "" {
			notes = append(notes, f.Note)
		}
		if f.Scan != "on" || !f.Install || !f.Changed || len(f.Added) == 0 {
			t.Errorf("%s: %+v, want an install that added entries, scan on", f.Settings, f)
		}
		if !strings.HasPrefix(f.Settings, ws+string(filepath.Separator)) {
			t.Errorf("%s is outside the workspace %s", f.Settings, ws)
		}
	}
	if !slices.Equal(r.Agents, []string{"claude", "codex"}) || !slices.Equal(agents, r.Agents) || len(notes) != 1 || !strings.HasPrefix(notes[0], "scan mode on for ") {
		t.Errorf("agents %q, notes %q; want claude and codex once each, one scan note", agents, notes)
	}
	if got := Installed(ws); !slices.Equal(got, []string{"claude", "codex"}) {
		t.Errorf("Installed = %q", got)
	}
	if def, err := controller.OpenStore(o.Store).WorkspaceScan(ws, ""); def != "on" || err != nil {
		t.Errorf("scan mode default %q (%v) after install, want on", def, err)
	}

	// Again: nothing changes, and no note.
	r, err = Install(ctx, []string{"codex"}, o)
	if err != nil || len(r.Files) != 1 || r.Files[0].Changed || r.Files[0].Note != "" {
		t.Errorf("second install: %+v, %v; want one unchanged file", r.Files, err)
	}

	r, err = Uninstall(ctx, []string{"claude", "codex"}, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".claude", ".codex"} {
		if !slices.Contains(r.RemovedDirs, filepath.Join(ws, d)) {
			t.Errorf("removed dirs %q lack %s", r.RemovedDirs, d)
		}
	}
	if r.ScanRestored != "unset" || len(Installed(ws)) != 0 {
		t.Errorf("scan restored %q, installed %q; want unset, none", r.ScanRestored, Installed(ws))
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("left in the workspace: %v", entries)
	}
	if def, _ := controller.OpenStore(o.Store).WorkspaceScan(ws, ""); def == "on" {
		t.Error("scan mode still on after uninstall")
	}
}

// TestInstallNothingFound: with no agent named and none on $PATH, in the
// home directory or in the workspace, Install says so and writes nothing.
func TestInstallNothingFound(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	ws := t.TempDir()
	r, err := Install(context.Background(), nil, Options{Workspace: ws, Store: t.TempDir()})
	if !errors.Is(err, ErrNoAgent) || len(r.Files) != 0 {
		t.Errorf("Install = %+v, %v; want ErrNoAgent", r, err)
	}
	if _, err := Uninstall(context.Background(), []string{"nosuch"}, Options{Workspace: ws, Store: t.TempDir()}); err == nil {
		t.Error("Uninstall of an unknown agent: no error")
	}
}

// TestInstallHTTPAddr: an http install's hook server address must be a
// loopback HOST:PORT with a fixed port; another is refused before any
// file is written.
func TestInstallHTTPAddr(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, addr := range []string{"10.0.0.1:3000", "127.0.0.1:0", "nonsense"} {
		ws := t.TempDir()
		_, err := Install(context.Background(), []string{"claude"}, Options{Workspace: ws, Store: t.TempDir(), HTTP: true, Addr: addr, NoScan: true})
		if err == nil || !strings.Contains(err.Error(), "loopback HOST:PORT") {
			t.Errorf("--http at %s: %v, want refused", addr, err)
		}
		if entries, _ := os.ReadDir(ws); len(entries) != 0 {
			t.Errorf("--http at %s wrote %v", addr, entries)
		}
	}
}
