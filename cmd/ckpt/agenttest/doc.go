// Package agenttest holds only tests: the real-agent harnesses, which
// drive the agents' own CLIs (Claude Code, Codex, Gemini, Cline, pi, the
// ACP agents behind `ckpt acp`, and seven agents started in a
// subdirectory) against scripted model servers with a ckpt binary built
// once by TestMain. cmd/ckpt/agenttest2 holds the rest (Copilot,
// OpenCode, Qwen Code, Amp) but Kilo Code's, in cmd/ckpt/agenttest3; the
// three share cmd/ckpt/internal/harness. They live apart from cmd/ckpt,
// and from each other, so each package has its own test timeout.
//
// Every test runs in parallel with the others (t.Parallel): each has its
// own workspace, home, store and model server, and sets no process state.
package agenttest
