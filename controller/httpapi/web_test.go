package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

const chromiumPath = "/usr/bin/chromium"

// TestWebRewindInChromium drives the page in real headless Chromium: it shows
// the turns, rewinds the code of one after showing its diff, and the file on
// disk and the page both change.
func TestWebRewindInChromium(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s: %v", chromiumPath, err)
	}
	ws, _, c := session(t)
	url := serve(t, c, httpapi.Options{Sessions: true})
	a := filepath.Join(ws, "a.txt")

	bctx := newBrowser(t)
	var count, diffText, status string
	var shot []byte
	artifacts := artifactsDir(t)
	saveShot := func(name string) {
		if len(shot) == 0 {
			return
		}
		p := filepath.Join(artifacts, name)
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Errorf("screenshot: %v", err)
			return
		}
		t.Logf("screenshot: %s", p)
	}
	defer shotOnFailure(t, bctx, artifacts)

	err := chromedp.Run(bctx,
		chromedp.Navigate(url+"/#token="+testToken),
		chromedp.WaitVisible(`#turn-0`, chromedp.ByID),
		chromedp.WaitVisible(`#turn-2`, chromedp.ByID),
		chromedp.AttributeValue(`#timeline`, "data-count", &count, nil, chromedp.ByID),
	)
	if err != nil {
		t.Fatalf("open page: %v", err)
	}
	if count != "3" {
		t.Fatalf("timeline shows %q turns, want 3", count)
	}
	// The page read the token from the fragment and took it out of the
	// address bar and the history entry.
	var href string
	if err := chromedp.Run(bctx, chromedp.Evaluate(`location.href`, &href)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(href, testToken) || strings.Contains(href, "token") {
		t.Errorf("location.href after load is %q: the token is still in the address bar", href)
	}
	if !strings.HasPrefix(href, url) {
		t.Errorf("location.href %q, want the page at %s", href, url)
	}
	// The event stream (fetch with the token in a header) is live and
	// drives the page: a turn opened through the controller shows up.
	if err := chromedp.Run(bctx, chromedp.WaitVisible(`#live.on`, chromedp.ByQuery)); err != nil {
		t.Fatalf("event stream: %v", err)
	}
	if _, err := c.BeginTurn(context.Background(), "fourth", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Run(bctx, chromedp.WaitVisible(`#turn-3`, chromedp.ByID)); err != nil {
		t.Fatalf("the page did not show a turn opened after it loaded: %v", err)
	}
	var prompt1 string
	if err := chromedp.Run(bctx, chromedp.Text(`#turn-1 .prompt`, &prompt1, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if prompt1 != "change a" {
		t.Errorf("turn 1 prompt %q", prompt1)
	}

	// Select turn 1 and ask to rewind the code: the diff shows a/ v2 → v1.
	err = chromedp.Run(bctx,
		chromedp.Click(`#turn-1`, chromedp.ByID),
		chromedp.WaitVisible(`#rewind-code`, chromedp.ByID),
		chromedp.Click(`#rewind-code`, chromedp.ByID),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
		chromedp.Text(`#diff`, &diffText, chromedp.ByID),
	)
	if err != nil {
		t.Fatalf("open the rewind dialog: %v", err)
	}
	if !strings.Contains(diffText, "a.txt") || !strings.Contains(diffText, "-v2") || !strings.Contains(diffText, "+v1") {
		t.Errorf("diff view: %q", diffText)
	}
	if b, _ := os.ReadFile(a); string(b) != "v2\n" {
		t.Fatalf("a.txt changed before confirming: %q", b)
	}
	var focused string
	if err := chromedp.Run(bctx, chromedp.Evaluate(`document.activeElement.id`, &focused)); err != nil {
		t.Fatal(err)
	}
	if focused != "confirm-cancel" {
		t.Errorf("focused %q, want Cancel as the default", focused)
	}

	// Confirm: the file goes back to v1 and the page says so.
	err = chromedp.Run(bctx,
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.WaitVisible(`#status[data-kind="ok"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#confirm`, chromedp.ByID),
		chromedp.Text(`#status`, &status, chromedp.ByID),
		chromedp.FullScreenshot(&shot, 100),
	)
	if err != nil {
		t.Fatalf("confirm the rewind: %v", err)
	}
	if b, _ := os.ReadFile(a); string(b) != "v1\n" {
		t.Errorf("a.txt after rewinding code to turn 1: %q, want v1", b)
	}
	if !strings.Contains(status, "Rewound code to turn #1") {
		t.Errorf("status line: %q", status)
	}
	// Undo is enabled once the page has read the history.
	wctx, wcancel := context.WithTimeout(bctx, patience)
	defer wcancel()
	if err := chromedp.Run(wctx, chromedp.WaitReady(`#undo:not([disabled])`, chromedp.ByQuery)); err != nil {
		t.Errorf("undo button disabled after a rewind: %v", err)
	}
	saveShot("ckpt-web-rewind.png")
}

// browser is the one headless Chromium the package's tests share: each
// test gets a tab of its own (its own page, sessionStorage and event
// stream), and the browser starts once, not once per test. TestMain
// stops it.
var browser struct {
	once    sync.Once
	ctx     context.Context // the browser's chromedp context
	cancel  func()
	profile string
	err     error
}

// TestMain stops the shared browser and deletes its profile after the
// tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.profile != "" {
		os.RemoveAll(browser.profile)
	}
	os.Exit(code)
}

// startBrowser starts the shared browser.
func startBrowser() {
	// Not a test's TempDir: the browser outlives every test, and
	// Chromium's helpers may still write to its profile as it stops.
	profile, err := os.MkdirTemp("", "ckpt-chromium-")
	if err != nil {
		browser.err = err
		return
	}
	browser.profile = profile
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		// Its home and XDG dirs in the profile too: Chromium otherwise
		// writes ~/.config/chromium/Crash Reports and ~/.cache/dconf.
		chromedp.Env("HOME="+profile, "XDG_CONFIG_HOME="+filepath.Join(profile, "config"),
			"XDG_CACHE_HOME="+filepath.Join(profile, "cache"), "XDG_DATA_HOME="+filepath.Join(profile, "data")),
		chromedp.WindowSize(1200, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(func(string, ...any) {}))
	browser.ctx = bctx
	browser.cancel = func() {
		// Close the browser over the protocol first, so that it and its
		// helper processes are gone before the profile is deleted (killed,
		// its network service can write to the profile afterwards).
		chromedp.Cancel(bctx)
		bcancel()
		acancel()
	}
	// The first Run starts the browser on bctx itself (a shorter-lived
	// context would stop it when it ended); it lives until TestMain.
	browser.err = chromedp.Run(bctx)
}

// newBrowser opens a tab of the shared headless Chromium for t (skipping
// t without Chromium) and returns a context for chromedp.Run on it. The
// tab closes when t ends, or after patience.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no %s: %v", chromiumPath, err)
	}
	browser.once.Do(startBrowser)
	if browser.err != nil {
		t.Fatalf("start chromium: %v", browser.err)
	}
	ctx, cancel := context.WithTimeout(browser.ctx, patience)
	t.Cleanup(cancel)
	tctx, tcancel := chromedp.NewContext(ctx)
	t.Cleanup(tcancel)
	// Open the tab on tctx itself: the first Run binds it to its context,
	// and a step's shorter-lived context would close it.
	if err := chromedp.Run(tctx); err != nil {
		t.Fatalf("open a chromium tab: %v", err)
	}
	return tctx
}

// artifactsDir is where screenshots go: $CKPT_ARTIFACTS, else the test's
// temp dir.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CKPT_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shotOnFailure saves what the page looked like when t failed (best
// effort); defer it.
func shotOnFailure(t *testing.T, bctx context.Context, dir string) {
	if !t.Failed() {
		return
	}
	sctx, cancel := context.WithTimeout(bctx, 5*time.Second)
	defer cancel()
	var shot []byte
	if chromedp.Run(sctx, chromedp.FullScreenshot(&shot, 100)) == nil {
		p := filepath.Join(dir, "ckpt-web-failure-"+strings.ReplaceAll(t.Name(), "/", "_")+".png")
		if os.WriteFile(p, shot, 0o644) == nil {
			t.Logf("screenshot: %s", p)
		}
	}
}
