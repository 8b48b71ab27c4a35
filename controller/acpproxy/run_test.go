package acpproxy_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/controller/acpproxy"
)

// TestRun: Run starts the agent on pipes, serves until its output ends and
// waits for it; an agent that cannot start, or exits with an error, is an
// error naming it.
func TestRun(t *testing.T) {
	store := t.TempDir()
	run := func(agent *exec.Cmd) (string, error) {
		var out bytes.Buffer
		err := acpproxy.New(acpproxy.Options{Store: controller.OpenStore(store)}).Run(context.Background(), agent, strings.NewReader(""), &out)
		return out.String(), err
	}

	// The test agent stops when its input ends: the client's did at once.
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), "ACPPROXY_TEST_AGENT=1")
	if out, err := run(agent); err != nil || out != "" {
		t.Errorf("test agent: %q, %v; want a clean stop", out, err)
	}
	if _, err := exec.LookPath("sh"); err == nil {
		// What the agent writes reaches the client unchanged.
		if out, err := run(exec.Command("sh", "-c", `echo '{"jsonrpc":"2.0","method":"x"}'`)); err != nil || out != "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n" {
			t.Errorf("agent output: %q, %v", out, err)
		}
		if _, err := run(exec.Command("sh", "-c", "exit 3")); err == nil || err.Error() != "the agent sh exited: exit status 3" {
			t.Errorf("failing agent: %v", err)
		}
	}
	if _, err := run(exec.Command("/nonexistent/agent")); err == nil || !strings.HasPrefix(err.Error(), "start the agent /nonexistent/agent: ") {
		t.Errorf("missing agent: %v", err)
	}
}
