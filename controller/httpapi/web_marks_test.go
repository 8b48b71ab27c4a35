package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

// TestWebMarksKindsAsTheCLI: the page marks each file of a turn with the
// mark the CLI shows (controller.ChangeKind.Mark), for every kind:
// created, modified, deleted and unchanged.
func TestWebMarksKindsAsTheCLI(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s: %v", chromiumPath, err)
	}
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
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
	for _, n := range []string{"mod.txt", "del.txt", "same.txt"} {
		check(os.WriteFile(filepath.Join(ws, n), []byte("old\n"), 0o644))
	}
	_, err = c.BeginTurn(ctx, "every kind", controller.TurnOptions{})
	check(err)
	for _, n := range []string{"mod.txt", "del.txt", "same.txt", "new.txt"} {
		_, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{filepath.Join(ws, n)}})
		err = errs[0]
		check(err)
	}
	check(os.WriteFile(filepath.Join(ws, "mod.txt"), []byte("new\n"), 0o644))
	check(os.Remove(filepath.Join(ws, "del.txt")))
	check(os.WriteFile(filepath.Join(ws, "new.txt"), []byte("made\n"), 0o644))
	_, err = c.BeginTurn(ctx, "next", controller.TurnOptions{})
	check(err)

	cps, _, err := c.Checkpoints(ctx, controller.ListOptions{})
	check(err)
	var want []string
	kinds := map[controller.ChangeKind]bool{}
	for _, f := range cps[0].Changes {
		want = append(want, f.Kind.Mark()+" "+f.Path)
		kinds[f.Kind] = true
	}
	if len(kinds) != 4 {
		t.Fatalf("turn 0 has kinds %v, want all four", kinds)
	}
	slices.Sort(want)

	url := serve(t, c, httpapi.Options{Sessions: true}) // before the tab: its cleanup waits for the tab's event stream
	bctx := newBrowser(t)
	defer shotOnFailure(t, bctx, artifactsDir(t))
	var got []string
	check(chromedp.Run(bctx,
		chromedp.Navigate(url+"/#token="+testToken),
		chromedp.WaitVisible(`#turn-1`, chromedp.ByID),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#turn-0 .files li"), (e) => e.textContent)`, &got),
	))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("turn 0's files on the page:\n got %q\nwant %q", got, want)
	}
}
