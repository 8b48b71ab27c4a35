// Package agenttest3 holds only tests: the real-agent harnesses for Kilo
// Code, whose CLI costs seconds of CPU per run (about a minute of a loaded
// 2-core machine), apart from cmd/ckpt/agenttest2 so that neither package
// comes near Go's package timeout; all three agenttest packages share
// cmd/ckpt/internal/harness.
//
// Every test runs in parallel with the others (t.Parallel): each has its
// own workspace, home, store and model server, and sets no process state.
package agenttest3
