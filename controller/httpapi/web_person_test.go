package httpapi_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

// TestWebPageAsAPerson uses the page as a person would, in headless
// Chromium: it reads which session and workspace it is about to change,
// meets a file edited by hand since the agent left it (listed before
// Confirm; overwriting takes a second confirmation, and declining it
// changes nothing), forces the rewind, undoes and redoes it from the
// history, and rewinds the conversation and then both. Undo and Redo are
// enabled exactly when there is something to undo or redo. Screenshots of
// each stage go to the test's temp dir (or $CKPT_ARTIFACTS) and must be
// PNG images.
func TestWebPageAsAPerson(t *testing.T) {
	t.Parallel()
	ws, _, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true})
	bctx := newBrowser(t)
	artifacts := artifactsDir(t)
	defer shotOnFailure(t, bctx, artifacts)
	a := filepath.Join(ws, "a.txt")
	ctx := context.Background()

	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, patience)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var st string
			_ = chromedp.Run(bctx, chromedp.Text(`#status`, &st, chromedp.ByID))
			t.Fatalf("%s: %v (status line: %q)", what, err, st)
		}
	}
	text := func(sel string) string {
		t.Helper()
		var s string
		run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
		return s
	}
	eval := func(js string, out any) {
		t.Helper()
		run(js, chromedp.Evaluate(js, out))
	}
	disabled := func(id string) bool {
		t.Helper()
		var d bool
		eval(`document.getElementById("`+id+`").disabled`, &d)
		return d
	}
	// buttons checks Undo and Redo once the page has settled on them.
	buttons := func(when string, undo, redo bool) {
		t.Helper()
		sel := func(id string, on bool) string {
			if on {
				return "#" + id + ":not([disabled])"
			}
			return "#" + id + "[disabled]"
		}
		if err := chromedp.Run(bctx, chromedp.WaitReady(sel("undo", undo), chromedp.ByQuery), chromedp.WaitReady(sel("redo", redo), chromedp.ByQuery)); err != nil {
			t.Fatalf("%s: undo enabled=%v, redo enabled=%v, want %v and %v: %v", when, !disabled("undo"), !disabled("redo"), undo, redo, err)
		}
	}
	file := func(want string) {
		t.Helper()
		b, err := os.ReadFile(a)
		if err != nil {
			b = []byte("<absent>")
		}
		if string(b) != want {
			t.Errorf("a.txt = %q, want %q", b, want)
		}
	}
	shots := 0
	screenshot := func(name string) {
		t.Helper()
		var shot []byte
		run("screenshot "+name, chromedp.FullScreenshot(&shot, 100))
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("screenshot %s is not a PNG: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
			t.Errorf("screenshot %s is %v", name, b)
		}
		p := filepath.Join(artifacts, "ckpt-web-"+name+".png")
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Fatalf("screenshot %s not written: %v", p, err)
		}
		shots++
	}

	// The page says which session and workspace it serves; nothing to
	// undo or redo yet.
	run("open the page",
		chromedp.Navigate(url+"/#token="+testToken),
		chromedp.WaitVisible(`#turn-2`, chromedp.ByID),
		chromedp.WaitReady(`body[data-loaded="true"]`, chromedp.ByQuery),
	)
	run("session shown", chromedp.WaitVisible(`//dd[@id="session"][not(text()="…")]`, chromedp.BySearch))
	if got := text("#session"); got != c.Session() {
		t.Errorf("session shown %q, want %q", got, c.Session())
	}
	if got := text("#workspace"); got != c.WorkspaceRoot() {
		t.Errorf("workspace shown %q, want %q", got, c.WorkspaceRoot())
	}
	buttons("at the start", false, false)
	if got := text("#history-empty"); got != "No rewinds yet." {
		t.Errorf("history placeholder %q", got)
	}
	screenshot("start")

	// A hand edit since the agent left a.txt: the preview lists it, and
	// Confirm becomes the way to a second confirmation.
	if err := os.WriteFile(a, []byte("hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("open the code rewind to turn 1",
		chromedp.Click(`#turn-1`, chromedp.ByID),
		chromedp.Click(`#rewind-code`, chromedp.ByID),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#conflicts`, chromedp.ByID),
	)
	if got := text("#conflicts-title"); got != "1 file changed since the agent left it; the rewind would overwrite it:" {
		t.Errorf("conflicts title %q", got)
	}
	if got := text("#conflict-list"); got != "a.txt" {
		t.Errorf("conflicts listed %q, want a.txt", got)
	}
	if got := text("#confirm-ok"); got != "Overwrite and rewind…" {
		t.Errorf("confirm button says %q", got)
	}
	screenshot("conflicts")
	run("first confirmation",
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.WaitVisible(`#force-confirm`, chromedp.ByID),
	)
	if got := text("#force-question"); got != "Overwrite 1 file changed since the agent left it?" {
		t.Errorf("force question %q", got)
	}
	if got := text("#force-confirm"); !strings.Contains(got, "The current content is stored first: Undo brings it back.") {
		t.Errorf("the second confirmation does not say undo brings them back: %q", got)
	}
	var focused string
	eval(`document.activeElement.id`, &focused)
	if focused != "force-cancel" {
		t.Errorf("focus on %q, want the No button", focused)
	}
	screenshot("force-confirm")
	file("hand\n")

	// Declining the second confirmation changes nothing.
	run("decline",
		chromedp.Click(`#force-cancel`, chromedp.ByID),
		chromedp.WaitNotVisible(`#confirm`, chromedp.ByID),
		chromedp.WaitVisible(`#status[data-kind="ok"]`, chromedp.ByQuery),
	)
	if got := text("#status"); got != "Nothing changed." {
		t.Errorf("status after declining %q", got)
	}
	file("hand\n")
	buttons("after declining", false, false)

	// Both confirmations: forced.
	run("force the rewind",
		chromedp.Click(`#rewind-code`, chromedp.ByID),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.WaitVisible(`#force-ok`, chromedp.ByID),
		chromedp.Click(`#force-ok`, chromedp.ByID),
		chromedp.WaitNotVisible(`#confirm`, chromedp.ByID),
		chromedp.WaitVisible(`#op-1`, chromedp.ByID),
		// The history may list the op while it runs; the status is set
		// when the request has returned, the files in place.
		chromedp.Poll(`document.getElementById("status").textContent.startsWith("Rewound")`, nil),
	)
	if got := text("#status"); !strings.HasPrefix(got, "Rewound code to turn #1: 1 file(s) changed") {
		t.Errorf("status after the forced rewind %q", got)
	}
	file("v1\n")
	buttons("after the rewind", true, false)
	if got := text("#op-1"); !strings.Contains(got, "rewind of code to turn #1") || !strings.Contains(got, "Undo reverses this") {
		t.Errorf("history entry %q", got)
	}

	// Undo brings the hand edit back; then only Redo is possible.
	run("undo",
		chromedp.Click(`#undo`, chromedp.ByID),
		chromedp.WaitVisible(`#op-2`, chromedp.ByID),
		chromedp.Poll(`document.getElementById("status").textContent.startsWith("Undid")`, nil),
	)
	file("hand\n")
	buttons("after undo", false, true)
	if got := text("#status"); got != "Undid the rewind of code to turn #1." {
		t.Errorf("status after undo %q", got)
	}
	if got := text("#op-1"); !strings.Contains(got, "Redo re-applies this") {
		t.Errorf("after undo, the rewind's entry %q", got)
	}
	screenshot("undone")

	// Redo re-applies the rewind.
	run("redo",
		chromedp.Click(`#redo`, chromedp.ByID),
		chromedp.WaitVisible(`#op-3`, chromedp.ByID),
	)
	file("v1\n")
	buttons("after redo", true, false)
	if got := text("#status"); got != "Redid the rewind of code to turn #1." {
		t.Errorf("status after redo %q", got)
	}

	// The conversation from turn 2 on: the prompt is handed back and the
	// files are left alone.
	run("rewind the conversation to turn 2",
		chromedp.Click(`#turn-2`, chromedp.ByID),
		chromedp.Click(`#rewind-conversation`, chromedp.ByID),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
	)
	if vis := text("#confirm-summary"); !strings.Contains(vis, "message(s) from turn #2 on would be dropped") {
		t.Errorf("conversation preview %q", vis)
	}
	run("confirm the conversation rewind",
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.Poll(`!document.getElementById("turn-2")`, nil),
	)
	if got := text("#status"); !strings.Contains(got, "Rewound conversation to turn #2") || !strings.Contains(got, "to edit and resend: third") {
		t.Errorf("status after the conversation rewind %q", got)
	}
	file("v1\n")

	// Both, to turn 0: a.txt did not exist then, and the conversation
	// keeps nothing.
	run("rewind both to turn 0",
		chromedp.Click(`#turn-0`, chromedp.ByID),
		chromedp.Click(`#rewind-both`, chromedp.ByID),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
	)
	var nConflicts string
	run("conflicts count", chromedp.AttributeValue(`#confirm`, "data-conflicts", &nConflicts, nil, chromedp.ByID))
	if nConflicts != "0" {
		t.Fatalf("rewind both to turn 0 shows %s conflicts: %s", nConflicts, text("#conflicts"))
	}
	if got := text("#diff"); !strings.Contains(got, "delete a.txt") {
		t.Errorf("preview of both to turn 0: %q", got)
	}
	run("confirm both",
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.Poll(`!document.getElementById("turn-0")`, nil),
	)
	file("<absent>")
	if got := text("#status"); !strings.Contains(got, "Rewound both to turn #0") {
		t.Errorf("status after rewinding both %q", got)
	}
	buttons("after rewinding both", true, false)
	screenshot("both")
	var count string
	run("history count", chromedp.AttributeValue(`#history`, "data-count", &count, nil, chromedp.ByID))
	if count != "5" {
		t.Errorf("history lists %s ops, want 5 (rewind, undo, redo, conversation, both)", count)
	}
	if cps, _, err := c.Checkpoints(ctx, controller.ListOptions{}); err != nil || len(cps) != 0 {
		t.Errorf("after rewinding both to turn 0: %d turns, %v", len(cps), err)
	}
	if shots != 5 {
		t.Errorf("%d screenshots", shots)
	}
}

// TestWebPageHintMatchesServe: without a token the page says to open the
// open_url that `ckpt serve` prints (cmd/ckpt's serve test checks that
// serve prints open_url, and says so).
func TestWebPageHintMatchesServe(t *testing.T) {
	t.Parallel()
	_, _, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true})
	bctx := newBrowser(t)
	var hint, status string
	err := chromedp.Run(bctx,
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(`#auth`, chromedp.ByID),
		chromedp.Text(`#auth-hint`, &hint, chromedp.ByID),
		chromedp.Text(`#status`, &status, chromedp.ByID),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{hint, status} {
		if !strings.Contains(s, "open_url") || !strings.Contains(s, "ckpt serve") {
			t.Errorf("hint %q does not name the open_url ckpt serve prints", s)
		}
	}
}
