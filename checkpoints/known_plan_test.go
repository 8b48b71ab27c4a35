package checkpoints

import (
	"context"
	"math"
	"strings"
	"testing"
)

// knownSQL reads each path through indexes only: no step of its plan
// scans snaps, op_files or turns (a scan would grow with the history).
func TestKnownSQLPlanSeeksOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, err := x.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+knownSQL, `["61"]`, int64(math.MaxInt64), `[1]`, int64(math.MinInt64))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", strings.Join(plan, "\n"))
	for _, d := range plan {
		for _, table := range []string{"snaps", "op_files", "turns"} {
			if strings.HasPrefix(d, "SCAN "+table) && !strings.Contains(d, "USING") {
				t.Errorf("plan scans %s: %q", table, d)
			}
		}
	}
}
