package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/controller"
)

// TestWorkspaceScanDefault: a workspace's scan-mode default reaches every
// session of it that has no setting of its own, existing and new ones;
// a session's own setting wins; the marker still locates the workspace.
func TestWorkspaceScanDefault(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	root := e.c.WorkspaceRoot()
	if def, err := controller.OpenStore(e.store).WorkspaceScan(root, ""); def != "" || err != nil {
		t.Fatalf("fresh workspace: scan default %q, %v; want none", def, err)
	}
	if _, err := controller.OpenStore(e.store).WorkspaceScan(root, "on"); err != nil {
		t.Fatal(err)
	}
	if on, err := e.c.Meta(ctx, "scan"); err != nil || on != "on" {
		t.Errorf("existing session after the workspace default went on: %v, %v; want on", on, err)
	}
	other, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Session: "other-agent", Store: e.store})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if on, err := other.Meta(ctx, "scan"); err != nil || on != "on" {
		t.Errorf("new session: %v, %v; want on (inherited)", on, err)
	}
	res, err := other.BeginTurn(ctx, "first", controller.TurnOptions{})
	if err != nil || !res.Scanned {
		t.Errorf("new session's first turn: scanned=%v err=%v; want a manifest", res.Scanned, err)
	}
	if err := other.SetMeta(ctx, "scan", "off"); err != nil {
		t.Fatal(err)
	}
	if on, _ := other.Meta(ctx, "scan"); on != "off" {
		t.Error("a session's own scan off lost to the workspace default")
	}
	loc, err := controller.OpenStore(e.store).Resolve(ctx, controller.ResolveOptions{Dir: e.ws + "/", Create: true})
	if err != nil || loc.Workspace != root || !loc.Found {
		t.Errorf("Resolve after the scan line was written: %+v, %v; want the workspace found", loc, err)
	}

	t.Setenv("HOME", root)
	if _, err := controller.OpenStore(e.store).WorkspaceScan(root, "on"); !errors.Is(err, controller.ErrScanRefused) {
		t.Errorf("scan default on in $HOME: %v, want ErrScanRefused", err)
	}
}

// TestWorkspaceScanOverBudgetFallsBack: a workspace whose inherited scan
// runs past the budget gets its default turned off, with a warning that
// says so; the next turn does not try again.
func TestWorkspaceScanOverBudgetFallsBack(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	for i := 0; i < 20; i++ {
		e.write(string(rune('a'+i))+"/f.txt", "x")
	}
	root := e.c.WorkspaceRoot()
	if _, err := controller.OpenStore(e.store).WorkspaceScan(root, "on"); err != nil {
		t.Fatal(err)
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: e.ws, Store: e.store, Scan: capture.ScanOptions{Budget: time.Nanosecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.BeginTurn(ctx, "big", controller.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned || !strings.Contains(res.Warning, "scan mode is now off") {
		t.Errorf("over budget: scanned=%v warning=%q; want no manifest and the fallback said", res.Scanned, res.Warning)
	}
	if def, err := controller.OpenStore(e.store).WorkspaceScan(root, ""); def != "off" || err != nil {
		t.Errorf("workspace default after the fallback: %q, %v; want off", def, err)
	}
	res, err = c.BeginTurn(ctx, "next", controller.TurnOptions{})
	if err != nil || res.Warning != "" || res.Scanned {
		t.Errorf("next turn: %+v, %v; want no scan and no warning", res, err)
	}
	if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{"a/f.txt"}}); errs[0] != nil {
		t.Errorf("edit capture after the fallback: %v", errs[0])
	}
}

// TestWorkspaceScanUnsetMarks: removing a workspace's scan default that
// was never set (what `ckpt install --no-scan` asks) still leaves the
// workspace known to the store, with no default: an agent's hook started
// in a subdirectory then records into the workspace's session.
func TestWorkspaceScanUnsetMarks(t *testing.T) {
	ctx := context.Background()
	store, ws := t.TempDir(), t.TempDir()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	st := controller.OpenStore(store)
	if _, err := st.WorkspaceScan(root, "none"); err != nil {
		t.Fatal(err)
	}
	if def, err := st.WorkspaceScan(root, ""); def != "" || err != nil {
		t.Errorf("scan default %q, %v; want none", def, err)
	}
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: sub, Create: true})
	if err != nil || loc.Workspace != root || !loc.Found {
		t.Errorf("Resolve from a subdirectory: %+v, %v; want workspace %s found", loc, err, root)
	}
}

// TestWorkspaceScanRefusesUnknownSetting: a setting that is neither on,
// off nor none is an error, and marks nothing.
func TestWorkspaceScanRefusesUnknownSetting(t *testing.T) {
	store, ws := t.TempDir(), t.TempDir()
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	st := controller.OpenStore(store)
	if _, err := st.WorkspaceScan(root, "maybe"); err == nil || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("scan default maybe: %v; want an error naming it", err)
	}
	if marks, _ := filepath.Glob(filepath.Join(store, "workspaces", "*")); len(marks) != 0 {
		t.Errorf("an unknown setting marked the workspace: %v", marks)
	}
}
