package jsondoctest

import (
	"slices"
	"testing"
)

func TestNulls(t *testing.T) {
	for _, tc := range []struct {
		doc     string
		allowed []string
		want    []string
	}{
		{`{"a": [], "b": {}}`, nil, nil},
		{`null`, nil, []string{""}},
		{`{"report": {"findings": null}, "ok": true}`, nil, []string{"report.findings"}},
		{`[{"files": null}, {"files": [null]}]`, nil, []string{"0.files", "1.files.0"}},
		{`{"gc": null, "plan": {"turns": null}}`, []string{"gc"}, []string{"plan.turns"}},
	} {
		got, err := Nulls([]byte(tc.doc), tc.allowed...)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Nulls(%s) = %q, %v; want %q", tc.doc, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `{`, `{} {}`} {
		if _, err := Nulls([]byte(bad)); err == nil {
			t.Errorf("Nulls(%q): no error", bad)
		}
	}
}
