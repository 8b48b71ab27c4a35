package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/httpapi"
)

// stepSession makes a session with one turn of three tool calls: a.txt
// goes v0 → v1 (step 1) → v2 (step 2), and b.txt is created in step 2;
// step 3 touches nothing.
func stepSession(t testing.TB) (ws string, c *controller.Controller) {
	t.Helper()
	ws, store := t.TempDir(), t.TempDir()
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt")
	must(os.WriteFile(a, []byte("v0\n"), 0o644))
	_, err = c.BeginTurn(ctx, "work", controller.TurnOptions{})
	must(err)
	for i, paths := range [][]string{{a}, {a, b}, nil} {
		st, err := c.BeginStep(ctx, controller.StepOptions{Key: "toolu_" + string(rune('A'+i)), Tool: "Edit"})
		must(err)
		for _, p := range paths {
			_, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}, Step: &st})
			must(errs[0])
		}
		switch i {
		case 0:
			must(os.WriteFile(a, []byte("v1\n"), 0o644))
		case 1:
			must(os.WriteFile(a, []byte("v2\n"), 0o644))
			must(os.WriteFile(b, []byte("b\n"), 0o644))
		}
	}
	return ws, c
}

func TestStepsOverHTTP(t *testing.T) {
	t.Parallel()
	ws, c := stepSession(t)
	url := serve(t, c, httpapi.Options{})

	r := call(t, "GET", url+"/api/checkpoints", testToken, "")
	if r.code != 200 || len(r.arr) != 1 {
		t.Fatalf("checkpoints: %d %s", r.code, r.raw)
	}
	steps, _ := r.arr[0].(map[string]any)["steps"].([]any)
	if len(steps) != 3 {
		t.Fatalf("steps: %s", r.raw)
	}
	s2 := steps[1].(map[string]any)
	if s2["step"] != float64(2) || s2["key"] != "toolu_B" || len(s2["files"].([]any)) != 2 {
		t.Errorf("step 2: %v", s2)
	}

	r = call(t, "GET", url+"/api/diff?turn=0&step=2", testToken, "")
	if r.code != 200 || r.obj["step"] != float64(2) || !strings.Contains(r.raw, "+v1") {
		t.Errorf("diff 0.2: %d %s", r.code, r.raw)
	}
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/api/diff?turn=0&step=0", "", 400},
		{"/api/diff?turn=0&step=9", "", 404},
		{"/api/rewind", `{"turn": 0, "step": 2, "scope": "both"}`, 400},
		{"/api/rewind", `{"turn": 0, "step": 9}`, 404},
		{"/api/rewind", `{"turn": 0, "step": -1}`, 400},
	} {
		method := "GET"
		if c.body != "" {
			method = "POST"
		}
		if r := call(t, method, url+c.path, testToken, c.body); r.code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.path, c.body, r.code, r.raw, c.code)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "v2\n" {
		t.Fatalf("a refused request changed a.txt: %q", b)
	}

	// No scope with a step: code.
	r = call(t, "POST", url+"/api/rewind", testToken, `{"turn": 0, "step": 2}`)
	if r.code != 200 || r.obj["scope"] != "code" || r.obj["step"] != float64(2) {
		t.Fatalf("rewind 0.2: %d %s", r.code, r.raw)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "v1\n" {
		t.Errorf("a.txt after rewind 0.2: %q, want v1", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt after rewind 0.2: %v, want it deleted", err)
	}
	r = call(t, "GET", url+"/api/history", testToken, "")
	if r.code != 200 || len(r.arr) != 1 || r.arr[0].(map[string]any)["step"] != float64(2) {
		t.Errorf("history: %s", r.raw)
	}
}

// TestWebRewindToStepInChromium rewinds to a step from the page: the
// turn's steps are listed, the step's button shows the diff to just
// before that tool call, and confirming restores it.
func TestWebRewindToStepInChromium(t *testing.T) {
	t.Parallel()
	ws, c := stepSession(t)
	url := serve(t, c, httpapi.Options{})
	bctx := newBrowser(t)
	defer shotOnFailure(t, bctx, artifactsDir(t))

	var stepText, diffText, title, status string
	err := chromedp.Run(bctx,
		chromedp.Navigate(url+"/#token="+testToken),
		chromedp.WaitVisible(`#turn-0 .steps li[data-step="3"]`, chromedp.ByQuery),
		chromedp.Text(`#turn-0 .steps li[data-step="2"]`, &stepText, chromedp.ByQuery),
		chromedp.Click(`#turn-0 .steps li[data-step="2"] .step-rewind`, chromedp.ByQuery),
		chromedp.WaitVisible(`#confirm[data-state="ready"]`, chromedp.ByQuery),
		chromedp.Text(`#confirm-title`, &title, chromedp.ByID),
		chromedp.Text(`#diff`, &diffText, chromedp.ByID),
	)
	if err != nil {
		t.Fatalf("open the step's rewind dialog: %v", err)
	}
	if !strings.Contains(stepText, "0.2") || !strings.Contains(stepText, "~a.txt") || !strings.Contains(stepText, "+b.txt") {
		t.Errorf("step 2 shows %q", stepText)
	}
	if !strings.Contains(title, "before tool call 2") {
		t.Errorf("dialog title %q", title)
	}
	if !strings.Contains(diffText, "-v2") || !strings.Contains(diffText, "+v1") || !strings.Contains(diffText, "delete b.txt") {
		t.Errorf("diff view: %q", diffText)
	}
	err = chromedp.Run(bctx,
		chromedp.Click(`#confirm-ok`, chromedp.ByID),
		chromedp.WaitVisible(`#status[data-kind="ok"]`, chromedp.ByQuery),
		chromedp.Text(`#status`, &status, chromedp.ByID),
	)
	if err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "v1\n" {
		t.Errorf("a.txt after the page's rewind to 0.2: %q, want v1", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt after the page's rewind to 0.2: %v, want it deleted", err)
	}
	if !strings.Contains(status, "Rewound code to turn #0 before tool call 2") {
		t.Errorf("status line: %q", status)
	}
}
