// Package jsondoctest checks JSON documents for what the CLI contract
// forbids: a list written as null.
package jsondoctest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Nulls returns the dot-separated path ("report.findings", "0.files") of
// every null in the JSON document b, except at keys named in allowed: keys
// documented to hold an object or null, never a list (such as "gc" in
// prune --dry-run). The document's own path is "". It fails when b is not
// one JSON document.
func Nulls(b []byte, allowed ...string) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON document")
	}
	var out []string
	var walk func(path []string, v any)
	walk = func(path []string, v any) {
		switch v := v.(type) {
		case nil:
			if len(path) == 0 || !slices.Contains(allowed, path[len(path)-1]) {
				out = append(out, strings.Join(path, "."))
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(append(slices.Clip(path), k), v[k])
			}
		case []any:
			for i, e := range v {
				walk(append(slices.Clip(path), fmt.Sprint(i)), e)
			}
		}
	}
	walk(nil, doc)
	return out, nil
}
