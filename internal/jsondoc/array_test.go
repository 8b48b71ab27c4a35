package jsondoc

import (
	"bufio"
	"bytes"
	"testing"
)

// TestArrayIsEncode: an array written an element at a time is byte for
// byte the whole list encoded at once.
func TestArrayIsEncode(t *testing.T) {
	type el struct {
		N    int               `json:"n"`
		S    string            `json:"s"`
		L    []string          `json:"l"`
		M    map[string]int    `json:"m"`
		Deep []map[string]bool `json:"deep"`
	}
	for name, list := range map[string][]el{
		"empty": {},
		"one":   {{N: 1, S: "a <b> & \"c\"", L: []string{}, M: map[string]int{}, Deep: []map[string]bool{}}},
		"several": {
			{N: 1, S: "ünï\ncödé", L: []string{"x", "y"}, M: map[string]int{"b": 2, "a": 1}, Deep: []map[string]bool{{"t": true}, {}}},
			{N: 2, L: []string{}, M: map[string]int{}, Deep: []map[string]bool{}},
		},
	} {
		var want bytes.Buffer
		if err := Encode(&want, list, true); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		a := NewArray(w)
		for _, e := range list {
			if err := a.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		w.Flush()
		if got.String() != want.String() {
			t.Errorf("%s: streamed\n%s\nwhole\n%s", name, got.String(), want.String())
		}
	}
}
