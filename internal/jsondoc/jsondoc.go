// Package jsondoc encodes the JSON documents ckpt prints (--json) and
// serves (the HTTP API). On top of encoding/json it keeps one promise of
// the CLI contract: a list is [] and a map {}, never null, however the Go
// value was built. A nil pointer stays null: it means "not there" (such as
// the gc report of a dry run), never an empty list.
package jsondoc

import (
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"strings"
)

// absent reports whether field f (of type sf) is a nil slice or map whose
// tag asks encoding/json to omit it when zero (omitzero): nil there means
// "not there", so it stays nil and is left out rather than written [].
func absent(sf reflect.StructField, f reflect.Value) bool {
	if k := f.Kind(); (k != reflect.Slice && k != reflect.Map) || !f.IsNil() {
		return false
	}
	_, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == "omitzero" {
			return true
		}
	}
	return false
}

// Encode writes v to w as one JSON document (indented when indent is set)
// followed by a newline, with every nil slice and map in it written as []
// or {}.
func Encode(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(Lists(v))
}

// Marshal is json.Marshal of Lists(v).
func Marshal(v any) ([]byte, error) { return json.Marshal(Lists(v)) }

// Lists returns a copy of v in which every nil slice and nil map reachable
// through exported struct fields, slices, arrays, maps, pointers and
// interfaces is empty instead, but for a field tagged omitzero (nil there
// means absent, and it is left out). v itself is not changed. Byte slices are
// left alone (encoding/json writes them as base64 strings), and so are
// values that marshal themselves (time.Time, blob ids).
func Lists(v any) any {
	if v == nil {
		return nil
	}
	return fill(reflect.ValueOf(v), 0).Interface()
}

// maxDepth bounds the walk, so a cyclic value cannot loop for ever
// (encoding/json fails on it anyway).
const maxDepth = 100

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshalsItself reports whether encoding/json leaves t's encoding to t.
func marshalsItself(t reflect.Type) bool {
	for _, m := range []reflect.Type{jsonMarshaler, textMarshaler} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

func fill(v reflect.Value, depth int) reflect.Value {
	t := v.Type()
	if depth > maxDepth || marshalsItself(t) {
		return v
	}
	depth++
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(fill(v.Elem(), depth))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(fill(v.Elem(), depth))
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range t.NumField() {
			if f := out.Field(i); f.CanSet() && !absent(t.Field(i), f) {
				f.Set(fill(v.Field(i), depth))
			}
		}
		return out
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return v
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(fill(v.Index(i), depth))
		}
		return out
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return v
		}
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(fill(v.Index(i), depth))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), fill(it.Value(), depth))
		}
		return out
	}
	return v
}
