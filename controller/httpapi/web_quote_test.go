package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
	"github.com/ckpt/ckpt/internal/quote"
	"github.com/ckpt/ckpt/internal/quote/quotetest"
)

// TestWebQuotesNamesInChromium: the page shows every name as the CLI does
// (quote.Path): the workspace's, and in a turn's file list, in the rewind
// dialog's diff (its ---/+++ labels too) and in the history, so a name holding a newline or
// an escape sequence shows as one quoted name, never as two lines.
func TestWebQuotesNamesInChromium(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The workspace's own name needs quoting too.
	ws, store := filepath.Join(t.TempDir(), "work\nspace"), t.TempDir()
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var names []string // every case a JSON string carries and a file can be named
	for _, tc := range quotetest.Cases {
		if utf8.ValidString(tc.In) && !strings.ContainsRune(tc.In, 0) {
			names = append(names, tc.In)
		}
	}
	_, err = c.BeginTurn(ctx, "odd names", controller.TurnOptions{})
	check(err)
	for _, n := range names {
		p := filepath.Join(ws, n)
		check(os.MkdirAll(filepath.Dir(p), 0o755))
		check(os.WriteFile(p, []byte("old\n"), 0o644))
		_, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}})
		err = errs[0]
		check(err)
		check(os.WriteFile(p, []byte("new\n"), 0o644))
	}
	_, err = c.BeginTurn(ctx, "next", controller.TurnOptions{})
	check(err)

	url := serve(t, c, httpapi.Options{Sessions: true}) // before the tab: its cleanup waits for the tab's event stream
	bctx := newBrowser(t)
	defer shotOnFailure(t, bctx, artifactsDir(t))
	texts := func(sel string) []string {
		t.Helper()
		var out []string
		if err := chromedp.Run(bctx, chromedp.Evaluate(`Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`), (e) => e.textContent)`, &out)); err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		slices.Sort(out)
		return out
	}
	want := func(prefix string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = prefix + quote.Path(n)
		}
		slices.Sort(out)
		return out
	}

	check(chromedp.Run(bctx,
		chromedp.Navigate(url+"/#token="+testToken),
		chromedp.WaitVisible(`#turn-1`, chromedp.ByID),
	))
	if got, w := texts(`#workspace`), []string{quote.Path(c.WorkspaceRoot())}; !slices.Equal(got, w) {
		t.Errorf("workspace shown as %q, want %q", got, w)
	}
	if got, w := texts(`#turn-0 .files li`), want("~ "); !slices.Equal(got, w) {
		t.Errorf("turn 0's files:\n got %q\nwant %q", got, w)
	}

	check(chromedp.Run(bctx,
		chromedp.Click(`#turn-0`, chromedp.ByID),
		chromedp.WaitVisible(`#rewind-code`, chromedp.ByID),
		chromedp.Click(`#rewind-code`, chromedp.ByID),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
	))
	if got, w := texts(`#diff .file > .path`), want("restore "); !slices.Equal(got, w) {
		t.Errorf("the rewind dialog's files:\n got %q\nwant %q", got, w)
	}
	var diff string
	check(chromedp.Run(bctx, chromedp.TextContent(`#diff`, &diff, chromedp.ByQuery)))
	for _, l := range []string{`--- "a/new\nline.txt"`, `+++ "b/new\nline.txt"`, `--- "a/esc\033[31m"`} {
		if !strings.Contains(diff, l+"\n") {
			t.Errorf("the diff has no line %s:\n%s", l, diff)
		}
	}

	check(chromedp.Run(bctx,
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.WaitVisible(`#status[data-kind="ok"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#history .op .hint`, chromedp.ByQuery),
	))
	var hist string
	check(chromedp.Run(bctx, chromedp.TextContent(`#history .op .hint`, &hist, chromedp.ByQuery)))
	for _, n := range names {
		if !strings.Contains(hist, quote.Path(n)) {
			t.Errorf("history %q does not show %s", hist, quote.Path(n))
		}
	}
	if strings.Contains(hist, "\n") {
		t.Errorf("history shows a raw newline: %q", hist)
	}
}
