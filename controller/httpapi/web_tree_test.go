package httpapi_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

// TestWebSessionTreeInChromium: the page shows the store's session tree,
// each fork under the session it came from, its own session marked; a
// page served for a fork deep in the tree shows that fork's turns and
// marks it.
func TestWebSessionTreeInChromium(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws, store, c := session(t)
	if _, err := c.Fork(ctx, 2, controller.ForkOptions{To: "f1"}); err != nil {
		t.Fatal(err)
	}
	f1, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "f1", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	if _, err := f1.Fork(ctx, 1, controller.ForkOptions{To: "f2"}); err != nil {
		t.Fatal(err)
	}
	f2, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "f2", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()

	// The servers before the tab: cleanups run last-in first-out, and a
	// server's Close waits for the tab's event stream until the tab closes.
	rootURL := serve(t, c, httpapi.Options{Sessions: true})
	f2URL := serve(t, f2, httpapi.Options{Sessions: true})
	bctx := newBrowser(t)
	artifacts := artifactsDir(t)
	defer shotOnFailure(t, bctx, artifacts)
	var current, count, rootClass string
	err = chromedp.Run(bctx,
		chromedp.Navigate(rootURL+"/#token="+testToken),
		chromedp.WaitVisible(`#session-tree li[data-session="f1"] > ul > li[data-session="f2"]`, chromedp.ByQuery),
		chromedp.AttributeValue(`#session-tree`, "data-count", &count, nil, chromedp.ByQuery),
		chromedp.AttributeValue(`#session-tree > li[data-session="`+c.Session()+`"]`, "class", &rootClass, nil, chromedp.ByQuery),
		chromedp.Text(`#session-tree > li[data-session="`+c.Session()+`"] > ul > li[data-session="f1"] > .hint`, &current, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("session tree: %v", err)
	}
	if count != "3" || rootClass != "node current" || current != "from turn #2" {
		t.Errorf("tree: %s sessions, root class %q, f1 says %q; want 3, \"node current\", \"from turn #2\"", count, rootClass, current)
	}

	var turns, mark string
	err = chromedp.Run(bctx,
		chromedp.Navigate(f2URL+"/#token="+testToken),
		chromedp.WaitVisible(`#turn-0`, chromedp.ByID),
		chromedp.WaitVisible(`#session-tree li.current[data-session="f2"]`, chromedp.ByQuery),
		chromedp.AttributeValue(`#timeline`, "data-count", &turns, nil, chromedp.ByID),
		chromedp.Text(`#session-tree li[data-session="f2"] > .tag`, &mark, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("page of f2: %v", err)
	}
	if turns != "1" || mark != "this page" {
		t.Errorf("page of f2: %s turns, mark %q; want 1, \"this page\"", turns, mark)
	}
}
