package checkpoints_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// TestChangeLogTrimmedBySteps: opening steps, like opening turns, keeps the
// change log bounded, so a turn of many tool calls does not grow it
// without end; what is left starts with the trim marker and ends with the
// newest change. The bound holds after every step, counting the step's
// own change (BeginStep reads the log's span before its insert logs it).
func TestChangeLogTrimmedBySteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const keep = 8
	x, err := checkpoints.Open(ctx, t.TempDir(), checkpoints.WithChangeLogKeep(keep))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.BeginTurn(ctx, "one turn", nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, _, err := x.BeginStep(ctx, fmt.Sprint("call-", i), "Edit"); err != nil {
			t.Fatal(err)
		}
		chs, err := x.ChangesAfter(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(chs) > keep+keep/4 {
			t.Fatalf("after step %d the change log holds %d rows; want at most %d", i+1, len(chs), keep+keep/4)
		}
	}
	chs, err := x.ChangesAfter(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	last, err := x.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) < keep+1 || len(chs) > 2*keep {
		t.Fatalf("change log holds %d rows after 52 changes; want %d to %d", len(chs), keep+1, 2*keep)
	}
	if chs[0].Kind != checkpoints.ChangeTrimmed || chs[len(chs)-1].ID != last || chs[len(chs)-1].Kind != checkpoints.ChangeStepOpened {
		t.Fatalf("change log runs from %+v to %+v; want the trim marker to the newest step (%d)", chs[0], chs[len(chs)-1], last)
	}
}
