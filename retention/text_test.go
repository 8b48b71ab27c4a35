package retention_test

import (
	"bytes"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/retention"
)

// TestReportsText: a plan and a verify report word themselves for people,
// the lists on out and the summaries on msgs; only an applied plan says
// what collecting freed, only a repair what it marked.
func TestReportsText(t *testing.T) {
	plan := retention.Plan{
		Sessions:   []retention.SessionDecision{{Session: "old", Action: "remove", Reason: "idle"}, {Session: "s", Action: "keep"}},
		Turns:      []retention.Decision{{Session: "s", Turn: 2, Action: "prune", Reason: "older than 30d"}},
		StoreBytes: 2048, FreedBytes: 1024, OverQuota: true,
	}
	for _, tc := range []struct {
		rep  *retention.GCReport
		msgs string
	}{
		{nil, "would prune 1 turns; the store holds 2.0 KiB, 1.0 KiB of it freed by this\n" + overQuota},
		{&retention.GCReport{Deleted: 3, FreedBytes: 1024}, "pruned 1 turns; the store holds 2.0 KiB, 1.0 KiB of it freed by this\n" + overQuota + "collected 3 blobs, 1.0 KiB\n"},
	} {
		var out, msgs bytes.Buffer
		if err := plan.WriteText(&out, &msgs, tc.rep); err != nil {
			t.Fatal(err)
		}
		if want := "remove session old: idle\nprune  s turn 2: older than 30d\n"; out.String() != want || msgs.String() != tc.msgs {
			t.Errorf("plan: out %q msgs %q, want %q and %q", out.String(), msgs.String(), want, tc.msgs)
		}
	}

	f := retention.Finding{Kind: retention.Missing, Blob: cas.ID{1}, Uses: []retention.Use{{Session: "s", Kind: checkpoints.RefSnap, Turn: 4, Path: "a.txt"}}}
	var lost bytes.Buffer
	f.WriteLost(&lost)
	if want := "lost: s turn 4 a.txt (snapshot, blob " + f.Blob.Short() + " missing)\n"; lost.String() != want {
		t.Errorf("lost: %q, want %q", lost.String(), want)
	}
	for _, repaired := range []int{0, 1} {
		var out, msgs bytes.Buffer
		rep := retention.VerifyReport{Blobs: 5, Checked: 4, Findings: []retention.Finding{f}, Repaired: repaired}
		if err := rep.WriteText(&out, &msgs); err != nil {
			t.Fatal(err)
		}
		want := "checked 4 referenced blobs of 5 stored: 1 findings\n"
		if repaired > 0 {
			want += "repaired: 1 references marked lost\n"
		}
		if out.String() != rep.String() || msgs.String() != want {
			t.Errorf("verify: out %q msgs %q, want %q and %q", out.String(), msgs.String(), rep.String(), want)
		}
	}
}

// TestRemovalSummary: a dry run says what removing a session would take,
// a removal what collecting its blobs freed.
func TestRemovalSummary(t *testing.T) {
	r := retention.Removal{Session: "s", Turns: 3, Pinned: []int{1}}
	rep := retention.GCReport{Deleted: 2, FreedBytes: 2048}
	if got, want := r.Summary(rep, true), "would remove session s: 3 turns, 1 pinned"; got != want {
		t.Errorf("dry run: %q, want %q", got, want)
	}
	if got, want := r.Summary(rep, false), "removed session s (3 turns); freed 2.0 KiB in 2 blobs"; got != want {
		t.Errorf("removal: %q, want %q", got, want)
	}
}

const overQuota = "warning: still over the quota: pinned turns, open turns, undo records and session indexes are kept (ckpt sessions rm ID removes a session)\n"
