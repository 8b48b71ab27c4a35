package jsondoc

import (
	"bufio"
	"bytes"
	"encoding/json"
)

// Array writes one indented JSON array an element at a time, so a long
// list need not be held whole: its bytes are what Encode(w, list, true)
// writes for the whole list. The elements are encoded as they are, so
// they must hold no nil list the document would show as null.
type Array struct {
	w   *bufio.Writer
	n   int // elements written
	buf bytes.Buffer
	enc *json.Encoder
}

// NewArray starts an array on w; nothing is written before the first Add
// or Close.
func NewArray(w *bufio.Writer) *Array { return &Array{w: w} }

// Add writes v as the next element, indented as json.Encoder with
// SetIndent("", "  ") indents it inside the whole list.
func (a *Array) Add(v any) error {
	if a.enc == nil {
		a.enc = json.NewEncoder(&a.buf)
		a.enc.SetIndent("  ", "  ")
	}
	a.buf.Reset()
	if err := a.enc.Encode(v); err != nil {
		return err
	}
	if a.n == 0 {
		a.w.WriteString("[\n  ")
	} else {
		a.w.WriteString(",\n  ")
	}
	a.n++
	_, err := a.w.Write(bytes.TrimSuffix(a.buf.Bytes(), []byte("\n")))
	return err
}

// Close ends the array (an empty one is []) and its line; it does not
// flush w.
func (a *Array) Close() {
	if a.n == 0 {
		a.w.WriteString("[]\n")
	} else {
		a.w.WriteString("\n]\n")
	}
}
