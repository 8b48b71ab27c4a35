package jsondoc

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

type inner struct {
	Names []string `json:"names"`
}

type doc struct {
	List      []int             `json:"list"`
	Map       map[string]int    `json:"map"`
	Inner     inner             `json:"inner"`
	Ptr       *inner            `json:"ptr"`
	NilPtr    *inner            `json:"nil_ptr"`
	Items     []inner           `json:"items"`
	Any       any               `json:"any"`
	Raw       []byte            `json:"raw"`
	Time      time.Time         `json:"time"`
	Omitted   []string          `json:"omitted,omitempty"`
	Nested    map[string][]int  `json:"nested"`
	Array     [2]inner          `json:"array"`
	hidden    []int             // unexported: encoding/json ignores it, and so does Lists
	Marshaled json.RawMessage   `json:"marshaled"`
	AnyMap    map[string]any    `json:"any_map"`
	PtrList   *[]string         `json:"ptr_list"`
	Strings   map[string]string `json:"strings,omitempty"`
	Absent    []inner           `json:"absent,omitzero"` // nil: left out
	Present   []inner           `json:"present,omitzero"`
}

func TestListsNeverNull(t *testing.T) {
	t.Parallel()
	var nilList []string
	v := doc{
		Ptr:     &inner{},
		Items:   []inner{{}},
		Any:     inner{},
		Nested:  map[string][]int{"a": nil},
		AnyMap:  map[string]any{"findings": []string(nil), "gc": (*inner)(nil)},
		PtrList: &nilList,
		Present: []inner{{}},
		hidden:  nil, // must stay out of the document (and out of the check)
	}
	var b bytes.Buffer
	if err := Encode(&b, v, false); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	want := `{"list":[],"map":{},"inner":{"names":[]},"ptr":{"names":[]},"nil_ptr":null,"items":[{"names":[]}],` +
		`"any":{"names":[]},"raw":null,"time":"0001-01-01T00:00:00Z","nested":{"a":[]},"array":[{"names":[]},{"names":[]}],` +
		`"marshaled":null,"any_map":{"findings":[],"gc":null},"ptr_list":[],"present":[{"names":[]}]}` + "\n"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The caller's value is not changed.
	if v.List != nil || v.Ptr.Names != nil || v.Items[0].Names != nil || v.Nested["a"] != nil || nilList != nil {
		t.Errorf("Lists changed its argument: %+v", v)
	}
}

func TestListsKeepsValues(t *testing.T) {
	t.Parallel()
	v := map[string]any{"a": []int{1, 2}, "b": "x", "c": 3, "d": []byte("hi"), "e": nil}
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"a":[1,2],"b":"x","c":3,"d":"aGk=","e":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if Lists(nil) != nil {
		t.Error("Lists(nil) is not nil")
	}
}
