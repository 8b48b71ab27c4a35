package main

import (
	"bytes"
	"testing"
)

func TestProgressOnlyOnATerminal(t *testing.T) {
	var b bytes.Buffer
	a := &app{stderr: &b}
	if a.watched() || a.progress("x", 1) != nil {
		t.Error("progress drawn on a buffer, which is not a terminal")
	}
}
