package main

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/ckpt/ckpt/controller/wire"
	"github.com/ckpt/ckpt/internal/jsondoc"
)

// TestListJSONStreamed: list --json prints its array one element at a
// time; the bytes must be what encoding the whole list at once gives.
func TestListJSONStreamed(t *testing.T) {
	steps := []wire.Step{
		{Step: 1, Time: "2026-01-02T03:04:05Z", Tool: "Edit", Key: "toolu_1", Files: []wire.StepFile{{Path: "a.go", Existed: true}}},
		{Step: 2, Time: "2026-01-02T03:04:06Z", Tool: "", Files: []wire.StepFile{}},
	}
	noSteps := []wire.Step{}
	for _, tc := range []struct {
		name string
		list []wire.Checkpoint
	}{
		{"empty", []wire.Checkpoint{}},
		{"one", []wire.Checkpoint{{Turn: 0, Time: "2026-01-02T03:04:05Z", Prompt: "fix <the> bug & \"quote\"", Files: []wire.File{}}}},
		{"several", []wire.Checkpoint{
			{Turn: 0, Time: "2026-01-02T03:04:05Z", Prompt: "first\nline", Files: []wire.File{{Path: "a.go", Kind: "modified"}, {Path: "b/c.txt", Kind: "created"}}},
			{Turn: 1, Time: "2026-01-02T03:04:06Z", Prompt: "ünïcödé", Files: []wire.File{{Path: "\xff.bin", PathBytes: []byte("\xff.bin"), Kind: "deleted"}}, Pinned: true, Label: "good"},
			{Turn: 2, Time: "2026-01-02T03:04:07Z", Prompt: "", Files: []wire.File{}, Pruned: true},
		}},
		{"steps", []wire.Checkpoint{
			{Turn: 3, Time: "2026-01-02T03:04:05Z", Prompt: "p", Files: []wire.File{}, Steps: steps},
			{Turn: 4, Time: "2026-01-02T03:04:05Z", Prompt: "q", Files: []wire.File{}, Steps: noSteps},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := jsondoc.Encode(&want, tc.list, true); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			l := &listOut{a: &app{json: true}, w: bufio.NewWriter(&got)}
			for _, el := range tc.list {
				if err := l.array().Add(el); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.finish(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("streamed:\n%s\nwhole:\n%s", got.String(), want.String())
			}
		})
	}
}
