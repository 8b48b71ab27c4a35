// Package agenttest2 holds only tests: the real-agent harnesses for
// Copilot, OpenCode, Qwen Code and Amp, as cmd/ckpt/agenttest holds the
// others and cmd/ckpt/agenttest3 Kilo Code's; they share
// cmd/ckpt/internal/harness and are split by run time, so each has Go's
// package timeout to itself and go test runs them side by side.
//
// Every test runs in parallel with the others (t.Parallel): each has its
// own workspace, home, store and model server, and sets no process state.
package agenttest2
