package checkpoints_test

import (
	"context"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// Relabel changes the open turn's prompt, and its user message, only while
// the prompt is still the one it expects; a closed turn or another label is
// left alone.
func TestRelabelOpenTurn(t *testing.T) {
	ctx := context.Background()
	x, err := checkpoints.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if ok, err := x.Relabel(ctx, "(started)", "first"); ok || err != nil {
		t.Fatalf("relabel with no turn: %v %v", ok, err)
	}
	for _, p := range []string{"(started)", "(started)"} {
		if _, err := x.BeginTurn(ctx, p, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := x.Relabel(ctx, "other", "second"); ok || err != nil {
		t.Fatalf("relabel of another label: %v %v", ok, err)
	}
	if ok, err := x.Relabel(ctx, "(started)", "second"); !ok || err != nil {
		t.Fatalf("relabel: %v %v", ok, err)
	}
	if ok, err := x.Relabel(ctx, "(started)", "again"); ok || err != nil {
		t.Fatalf("relabel of a relabelled turn: %v %v", ok, err)
	}
	cps, err := x.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 2 || cps[0].Prompt != "(started)" || cps[1].Prompt != "second" {
		t.Errorf("turns %+v: want the open one relabelled only", cps)
	}
	msgs, err := x.Conversation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Text != "(started)" || msgs[1].Text != "second" || msgs[1].Turn != 1 {
		t.Errorf("conversation %+v: want turn 1's user message relabelled", msgs)
	}
}
