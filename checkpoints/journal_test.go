package checkpoints_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

func texts(t testing.TB, x *checkpoints.Index) string {
	t.Helper()
	msgs, err := x.Conversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return fmt.Sprint(out)
}

// finish plans and finishes an op that rewrites no file.
func finish(t testing.TB, x *checkpoints.Index, op checkpoints.Op) checkpoints.Op {
	t.Helper()
	ctx := context.Background()
	op, err := x.PlanOp(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.FinishOp(ctx, op.ID, checkpoints.Done{}); err != nil {
		t.Fatal(err)
	}
	return op
}

// TestJournalRecordsConversationChangesAndRedoes checks the op_conv record
// of each op and that an undo of an undo (a redo) puts back exactly what
// the undo replaced, turns opened in between included.
func TestJournalRecordsConversationChangesAndRedoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	for i := 0; i < 3; i++ {
		x.BeginTurn(ctx, fmt.Sprintf("p%d", i), nil, nil)
		x.AppendMessage(ctx, "assistant", fmt.Sprintf("a%d", i))
	}
	original := texts(t, x)
	rw := finish(t, x, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 1, Scope: checkpoints.ScopeConversation, Prompt: "p1"})
	if _, err := x.BeginTurn(ctx, "p1-bis", nil, nil); err != nil {
		t.Fatal(err)
	}
	afterRewind := texts(t, x)
	if afterRewind != "[p0 a0 p1-bis]" {
		t.Fatalf("after rewind and a new turn: %s", afterRewind)
	}
	undo := finish(t, x, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 1, Scope: checkpoints.ScopeConversation, Undoes: rw.ID})
	if got := texts(t, x); got != original {
		t.Fatalf("after undo: %s, want %s", got, original)
	}
	redo := finish(t, x, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 1, Scope: checkpoints.ScopeConversation, Undoes: undo.ID})
	if got := texts(t, x); got != afterRewind {
		t.Fatalf("after redo: %s, want %s", got, afterRewind)
	}
	finish(t, x, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 1, Scope: checkpoints.ScopeConversation, Undoes: redo.ID})
	if got := texts(t, x); got != original {
		t.Fatalf("after undoing the redo: %s, want %s", got, original)
	}

	j, err := x.Journal(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := x.ConvState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prompt := map[int64]string{}
	for _, tr := range st.Turns {
		prompt[tr.ID] = tr.Prompt
	}
	describe := func(e checkpoints.Entry) string {
		s := ""
		for _, v := range e.Changes {
			if v.Message {
				s += fmt.Sprintf(" msg%d:%v", v.ID, v.ShownBefore)
				continue
			}
			s += fmt.Sprintf(" %s:%v", prompt[v.ID], v.ShownBefore)
		}
		return fmt.Sprintf("%s %d %s%s", e.Kind, e.Undoes, e.State, s)
	}
	want := []string{
		"rewind 0 undone p1:true p2:true",
		fmt.Sprintf("undo %d undone p1:false p2:false p1-bis:true", rw.ID),
		fmt.Sprintf("undo %d undone p1:true p2:true p1-bis:false", undo.ID),
		fmt.Sprintf("undo %d done p1:false p2:false p1-bis:true", redo.ID),
	}
	if len(j) != len(want) {
		t.Fatalf("journal has %d ops, want %d", len(j), len(want))
	}
	for i, e := range j {
		if !e.Recorded {
			t.Errorf("op %d not recorded", e.ID)
		}
		// Changes are ordered by kind then row id: p1, p2, p1-bis.
		if got := describe(e); got != want[i] {
			t.Errorf("op %d:\ngot  %s\nwant %s", i, got, want[i])
		}
	}
}

func TestJournalRecordsSummarize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x := open(t, t.TempDir())
	for i := 0; i < 2; i++ {
		x.BeginTurn(ctx, fmt.Sprintf("p%d", i), nil, nil)
		x.AppendMessage(ctx, "assistant", fmt.Sprintf("a%d", i))
	}
	original := texts(t, x)
	s := finish(t, x, checkpoints.Op{Kind: checkpoints.OpRewind, Turn: 1, Scope: checkpoints.ScopeConversation, Prompt: "SUM", Action: checkpoints.ActionSummarizeFrom})
	summarized := texts(t, x)
	if summarized != "[p0 a0 SUM]" {
		t.Fatalf("after summarize: %s", summarized)
	}
	u := finish(t, x, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 1, Scope: checkpoints.ScopeConversation, Undoes: s.ID})
	if got := texts(t, x); got != original {
		t.Fatalf("after undo: %s, want %s", got, original)
	}
	finish(t, x, checkpoints.Op{Kind: checkpoints.OpUndo, Turn: 1, Scope: checkpoints.ScopeConversation, Undoes: u.ID})
	if got := texts(t, x); got != summarized {
		t.Fatalf("after redo: %s, want %s", got, summarized)
	}
	j, err := x.Journal(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var hid, added int
	for _, v := range j[0].Changes {
		switch {
		case !v.Message:
			t.Errorf("summarize changed turn %d", v.ID)
		case v.ShownBefore:
			hid++
		default:
			added++
		}
	}
	if hid != 2 || added != 1 {
		t.Errorf("summarize record: %d hidden, %d added; want 2 (p1, a1) and 1 (the summary)", hid, added)
	}
}
