// Package agenttest holds only tests: the real-agent harnesses, which
// drive the agents' own CLIs (Claude Code, Codex, Gemini, Copilot, Cline,
// OpenCode, pi, Qwen, Kilo, Amp) against scripted model servers with a
// ckpt binary built once by TestMain. They live apart from cmd/ckpt so
// each package has its own test timeout.
package agenttest
