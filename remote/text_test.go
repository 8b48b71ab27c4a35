package remote

import (
	"bytes"
	"testing"
)

// TestReportsText: a collection lists the keys it deleted and a verify
// its findings on out, a line each, with the summary on msgs.
func TestReportsText(t *testing.T) {
	var out, msgs bytes.Buffer
	g := GCReport{Deleted: []string{"packs/a", "packs/b"}, DryRun: true}
	g.WriteText(&out, &msgs)
	if out.String() != "packs/a\npacks/b\n" || msgs.String() != g.Summary()+"\n" {
		t.Errorf("gc: out %q msgs %q", out.String(), msgs.String())
	}
	out.Reset()
	msgs.Reset()
	v := VerifyReport{Sessions: 1, Findings: []Finding{{Session: "s", Key: "packs/a", Kind: "missing", Detail: "gone"}}}
	v.WriteText(&out, &msgs)
	if out.String() != v.Findings[0].String()+"\n" || msgs.String() != "checked 1 remote sessions, 0 packs, 0 blobs: 1 findings\n" {
		t.Errorf("verify: out %q msgs %q", out.String(), msgs.String())
	}
}
