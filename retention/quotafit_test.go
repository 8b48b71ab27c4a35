package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// smallEdits records n turns, each editing one of 50 small text files: the
// blobs are short deltas, so SQLite's rows, pages and WALs, not compressed
// bytes, are most of what the store takes. It returns the open controller.
func smallEdits(t *testing.T, store string, n int) *controller.Controller {
	t.Helper()
	ctx := context.Background()
	ws := t.TempDir()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := c.BeginTurn(ctx, fmt.Sprintf("turn %d", i), controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("f%02d.txt", i%50)
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{name}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		body := strings.Repeat(fmt.Sprintf("line %d of turn %d %x\n", i, i, i*7919), 60)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// kept counts the turns a plan keeps.
func kept(plan retention.Plan) int {
	n := 0
	for _, d := range plan.Turns {
		if d.Action == "keep" {
			n++
		}
	}
	return n
}

// TestQuotaKeepsWhatFits applies a quota of 3/4 of a compacted store of
// 1,000 turns of small edits. The store must end under the quota, the plan
// must say so, and retention must keep what fits. The planner counted
// blobs.db's per-row overhead as fixed (kept 1 turn and said the store was
// still over the quota while it was under), and took a pruned blob that a
// kept delta is stored against as freed (said under the quota, left the
// store over it).
func TestQuotaKeepsWhatFits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	const turns = 1000
	c := smallEdits(t, store, turns)
	// A gc with nothing to collect compacts blobs.db.
	if _, _, err := c.Store().Retain(ctx, controller.RetainOptions{CollectOnly: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := retention.DiskUsage(store)
	if err != nil {
		t.Fatal(err)
	}
	quota := before.Total * 3 / 4
	st := controller.OpenStore(store)
	defer st.Close()
	plan, _, err := st.Retain(ctx, controller.RetainOptions{MaxBytes: strconv.FormatInt(quota, 10)})
	if err != nil {
		t.Fatal(err)
	}
	after, err := retention.DiskUsage(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("store %d bytes, quota %d: %d after retention, %d of %d turns kept", before.Total, quota, after.Total, kept(plan), turns)
	if after.Total > quota || plan.OverQuota {
		t.Fatalf("%d bytes on disk after retention, quota %d; the plan says over the quota: %v", after.Total, quota, plan.OverQuota)
	}
	if kept(plan) < 10 {
		t.Errorf("retention kept %d of %d turns under a quota of 3/4 of the store", kept(plan), turns)
	}
}

// TestQuotaDoesNotPruneForTheWAL: a long-running process leaves blobs.db's
// WAL megabytes long, and collection's compaction gives that back. Under a
// quota that the compacted store fits, retention prunes nothing; the
// planner counted the WAL as fixed and pruned every turn but the open one.
func TestQuotaDoesNotPruneForTheWAL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	const turns = 300
	c := smallEdits(t, store, turns)
	defer c.Close()
	wal, err := os.Stat(filepath.Join(store, "blobs", "blobs.db-wal"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := retention.DiskUsage(store)
	if err != nil {
		t.Fatal(err)
	}
	if wal.Size() < before.Total/2 {
		t.Skipf("blobs.db-wal is %d of the store's %d bytes: no WAL to test with", wal.Size(), before.Total)
	}
	quota := before.Total / 2
	plan, _, err := c.Store().Retain(ctx, controller.RetainOptions{MaxBytes: strconv.FormatInt(quota, 10)})
	if err != nil {
		t.Fatal(err)
	}
	after, err := retention.DiskUsage(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("store %d bytes (WAL %d), quota %d: %d after retention, %d of %d turns kept", before.Total, wal.Size(), quota, after.Total, kept(plan), turns)
	if after.Total > quota || plan.OverQuota {
		t.Fatalf("%d bytes on disk after retention, quota %d; the plan says over the quota: %v", after.Total, quota, plan.OverQuota)
	}
	if len(plan.Prunes()) != 0 {
		t.Errorf("retention pruned %d turns, but compacting blobs.db alone brings the store under the quota", len(plan.Prunes()[c.Session()]))
	}
}
