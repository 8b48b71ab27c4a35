package retention_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/retention"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func blob(s string) cas.ID { return cas.Sum([]byte(s)) }

// turns builds a session's turn records, one per age (oldest first), each
// referencing the blobs named in refs[i].
func turns(ages []time.Duration, refs [][]string) []checkpoints.TurnRecord {
	out := make([]checkpoints.TurnRecord, len(ages))
	for i, a := range ages {
		out[i] = checkpoints.TurnRecord{ID: int64(i + 1), Seq: int64(i + 1), Number: i, Time: now.Add(-a)}
		for _, r := range refs[i] {
			out[i].Blobs = append(out[i].Blobs, blob(r))
		}
	}
	return out
}

func actions(p retention.Plan, session string) string {
	var b strings.Builder
	for _, d := range p.Turns {
		if d.Session == session {
			b.WriteByte(d.Action[0]) // k or p
		}
	}
	return b.String()
}

const day = 24 * time.Hour

func TestEvaluateRules(t *testing.T) {
	t.Parallel()
	sizes := map[cas.ID]int64{blob("a"): 100, blob("b"): 200, blob("c"): 300, blob("d"): 400, blob("u"): 1000}
	ages := []time.Duration{40 * day, 35 * day, 10 * day, 2 * day, time.Hour}
	refs := [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"a"}}
	for _, tc := range []struct {
		name   string
		policy retention.Policy
		pin    int // -1: none
		want   string
		reason string // of turn 0
	}{
		{"age", retention.Policy{MaxAge: 30 * day}, -1, "ppkkk", "older than max age 30d"},
		{"count", retention.Policy{KeepTurns: 2}, -1, "pppkk", "beyond the newest 2 turns"},
		{"age and count: the stricter wins", retention.Policy{MaxAge: 30 * day, KeepTurns: 4}, -1, "ppkkk", "older than max age 30d"},
		{"pinned old turn keeps itself and all after", retention.Policy{MaxAge: 30 * day, KeepTurns: 1}, 1, "pkkkk", "older than max age 30d"},
		{"pinned first turn keeps everything", retention.Policy{KeepTurns: 1}, 0, "kkkkk", "pinned"},
		{"the open turn always stays", retention.Policy{MaxAge: time.Minute}, -1, "ppppk", "older than max age 1m0s"},
		{"zero policy keeps all", retention.Policy{}, -1, "kkkkk", "within max age and keep count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := retention.Session{ID: "s", LastUse: now, Turns: turns(ages, refs), Undo: []cas.ID{blob("u")}}
			if tc.pin >= 0 {
				s.Turns[tc.pin].Pinned = true
			}
			plan := retention.Evaluate(tc.policy, now, []retention.Session{s}, sizes)
			if got := actions(plan, "s"); got != tc.want {
				t.Errorf("actions = %s, want %s", got, tc.want)
			}
			if plan.Turns[0].Reason != tc.reason {
				t.Errorf("turn 0 reason = %q, want %q", plan.Turns[0].Reason, tc.reason)
			}
		})
	}
}

func TestEvaluateFreedBytesKeepsSharedAndUndo(t *testing.T) {
	t.Parallel()
	// Turn 0 references a and b; a is also referenced by the kept turn 2,
	// and u by an undo record: pruning turn 0 frees only b.
	sizes := map[cas.ID]int64{blob("a"): 100, blob("b"): 200, blob("u"): 1000, blob("orphan"): 7}
	s := retention.Session{ID: "s", LastUse: now, Undo: []cas.ID{blob("u")},
		Turns: turns([]time.Duration{40 * day, 20 * day, day}, [][]string{{"a", "b"}, {"u"}, {"a"}})}
	plan := retention.Evaluate(retention.Policy{MaxAge: 30 * day}, now, []retention.Session{s}, sizes)
	if got := actions(plan, "s"); got != "pkk" {
		t.Fatalf("actions = %s, want pkk", got)
	}
	if plan.StoreBytes != 1307 || plan.FreedBytes != 207 {
		t.Errorf("store %d freed %d; want 1307 and 207 (b plus the orphan)", plan.StoreBytes, plan.FreedBytes)
	}
}

func TestEvaluateQuotaOldestFirstAcrossSessions(t *testing.T) {
	t.Parallel()
	sizes := map[cas.ID]int64{}
	for _, k := range []string{"x0", "x1", "x2", "y0", "y1", "y2"} {
		sizes[blob(k)] = 100
	}
	x := retention.Session{ID: "x", LastUse: now, Turns: turns([]time.Duration{9 * day, 5 * day, day}, [][]string{{"x0"}, {"x1"}, {"x2"}})}
	y := retention.Session{ID: "y", LastUse: now, Turns: turns([]time.Duration{8 * day, 4 * day, day}, [][]string{{"y0"}, {"y1"}, {"y2"}})}
	plan := retention.Evaluate(retention.Policy{MaxBytes: 350}, now, []retention.Session{x, y}, sizes)
	// 600 stored; pruning x0 (oldest), y0, then x1 brings it to 300.
	if a, b := actions(plan, "x"), actions(plan, "y"); a != "ppk" || b != "pkk" {
		t.Errorf("actions x=%s y=%s, want ppk pkk", a, b)
	}
	if plan.OverQuota {
		t.Errorf("OverQuota set, but the plan fits")
	}
	if !strings.Contains(plan.Turns[0].Reason, "quota") {
		t.Errorf("reason %q does not name the quota", plan.Turns[0].Reason)
	}
	// A pinned turn and open turns cannot go: the quota cannot be met.
	y.Turns[0].Pinned = true
	plan = retention.Evaluate(retention.Policy{MaxBytes: 50}, now, []retention.Session{x, y}, sizes)
	if !plan.OverQuota || actions(plan, "y") != "kkk" || actions(plan, "x") != "ppk" {
		t.Errorf("over-quota plan: x=%s y=%s over=%v; want ppk kkk true", actions(plan, "x"), actions(plan, "y"), plan.OverQuota)
	}
}

func TestEvaluateRemovesIdleSessions(t *testing.T) {
	t.Parallel()
	idle := retention.Session{ID: "idle", LastUse: now.Add(-60 * day), Turns: turns([]time.Duration{61 * day}, [][]string{{"a"}})}
	pinned := retention.Session{ID: "pinned", LastUse: now.Add(-60 * day), Turns: turns([]time.Duration{61 * day}, [][]string{{"b"}})}
	pinned.Turns[0].Pinned = true
	busy := retention.Session{ID: "busy", LastUse: now, Turns: turns([]time.Duration{time.Hour}, [][]string{{"c"}})}
	plan := retention.Evaluate(retention.DefaultPolicy(), now, []retention.Session{idle, pinned, busy}, nil)
	if got := plan.Removes(); len(got) != 1 || got[0] != "idle" {
		t.Errorf("removes %v, want [idle]", got)
	}
}

// With Policy.Session set, only that session's turns are pruned, nothing is
// removed whole (an idle session included), and the other sessions still
// count toward the quota.
func TestEvaluateSessionOnly(t *testing.T) {
	t.Parallel()
	sizes := map[cas.ID]int64{}
	for _, k := range []string{"x0", "x1", "x2", "y0", "y1", "y2", "i0"} {
		sizes[blob(k)] = 100
	}
	x := retention.Session{ID: "x", LastUse: now, Turns: turns([]time.Duration{9 * day, 5 * day, day}, [][]string{{"x0"}, {"x1"}, {"x2"}})}
	y := retention.Session{ID: "y", LastUse: now, Turns: turns([]time.Duration{8 * day, 4 * day, day}, [][]string{{"y0"}, {"y1"}, {"y2"}})}
	idle := retention.Session{ID: "idle", LastUse: now.Add(-60 * day), Turns: turns([]time.Duration{61 * day}, [][]string{{"i0"}})}
	sessions := []retention.Session{idle, x, y}
	plan := retention.Evaluate(retention.Policy{MaxAge: 30 * day, KeepTurns: 1, MaxBytes: 350, Session: "y"}, now, sessions, sizes)
	if got := plan.Removes(); len(got) != 0 {
		t.Errorf("removes %v, want nothing: only y is pruned", got)
	}
	if a, b, c := actions(plan, "x"), actions(plan, "y"), actions(plan, "idle"); a != "kkk" || b != "ppk" || c != "k" {
		t.Errorf("actions x=%s y=%s idle=%s, want kkk ppk k", a, b, c)
	}
	if !plan.OverQuota {
		t.Errorf("OverQuota not set: 500 bytes stay, over 350, and only y could be pruned")
	}
}

// The quota weighs every byte ckpt keeps, session indexes included: many
// sessions with small indexes are over a quota their blobs alone are not.
func TestEvaluateQuotaCountsIndexes(t *testing.T) {
	t.Parallel()
	sizes := map[cas.ID]int64{blob("a0"): 10, blob("a1"): 10}
	a := retention.Session{ID: "a", LastUse: now, IndexBytes: 100_000, Turns: turns([]time.Duration{2 * day, day}, [][]string{{"a0"}, {"a1"}})}
	b := retention.Session{ID: "b", LastUse: now, IndexBytes: 100_000, Turns: turns([]time.Duration{day}, [][]string{{}})}
	plan := retention.Evaluate(retention.Policy{MaxBytes: 150_000}, now, []retention.Session{a, b}, sizes)
	if plan.StoreBytes != 200_020 {
		t.Errorf("StoreBytes = %d, want 200020: blobs and both indexes", plan.StoreBytes)
	}
	if !plan.OverQuota {
		t.Errorf("OverQuota not set: the indexes alone are over the quota")
	}
	if got := actions(plan, "a"); got != "pk" {
		t.Errorf("actions a=%s, want pk: the oldest turn goes before the quota is declared unmeetable", got)
	}
}
