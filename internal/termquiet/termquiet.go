// Package termquiet keeps a ckpt process from querying its terminal while
// its packages initialize, so no command waits on a terminal that does not
// answer.
//
// Bubble Tea v1 asks Lip Gloss, from its package initialization, whether
// the terminal's background is dark. When stdout is a terminal, termenv
// answers that by writing an OSC 11 colour query and a cursor position
// request to it and reading the replies, giving up after termenv's
// OSCTimeout (5 s). Every process that links Bubble Tea does this before
// main runs, whatever the command: `ckpt list` under a terminal that never
// replies (script(1) with no reader, a multiplexer or program that
// swallows the reply) stalls for 5 s, the picker before its first frame.
// ckpt never needs the answer: the picker uses only the 16 ANSI colours,
// bold, faint and reverse, which read well on any background.
//
// termenv does not query a terminal whose TERM is "dumb". This package's
// init sets TERM so while the packages above it initialize, and Release
// puts it back. It imports nothing but os, so Go's initialization order
// (packages in import-path order, each as soon as its imports are done)
// runs its init before github.com/muesli/termenv's, hence before Lip
// Gloss's and Bubble Tea's. The colour profile is read from TERM later,
// when the picker first draws, after Release.
package termquiet

import "os"

// held is TERM as the process got it, while init's value is in place.
var held struct {
	active bool
	value  string
	set    bool
}

func init() {
	held.value, held.set = os.LookupEnv("TERM")
	held.active = true
	os.Setenv("TERM", "dumb")
}

// Release gives TERM back the value the process started with. Package main
// calls it from its init, which runs after every package's; later calls do
// nothing.
func Release() {
	if !held.active {
		return
	}
	held.active = false
	if held.set {
		os.Setenv("TERM", held.value)
	} else {
		os.Unsetenv("TERM")
	}
}
