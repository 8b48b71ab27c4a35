// Package hook applies agents' hook events to a store's sessions: the one
// implementation of ckpt's hook, whether it runs as a process per event
// (Handler.Run reads one event and writes the agent's answer: what `ckpt
// hook AGENT` does; Handler.Handle takes the event's bytes) or resident
// (Server, the http.Handler `ckpt serve` mounts at /hook/; Keep sweeps
// it).
//
// An event is decoded by its agent (package agent) into a Plan; the
// Handler finds the event's workspace and session, opens the session's
// controller and records: a prompt opens a turn, a tool call captures the
// files it is about to write as a step of its own, a shell command keeps
// scan mode's manifest, a session start records a resume checkpoint in
// scan mode. For an agent that is an agent.Conversation (Claude Code) it
// also records where each turn begins in the conversation (TurnPlace) and
// makes a conversation that continues a recorded one a ckpt fork of it.
//
// The Server proves it is the store's to clients that ping it (an HMAC
// under the store's key, which never leaves the store), and takes an
// event only with the token of an install (Configure) whose root holds
// the event's workspace. EnsureServer starts it as a process of the ckpt
// executable when an install wants it and nothing answers, StopServer
// stops it, ServerProblem says what is wrong with it; StartDetached is
// how a hook starts such background work (the resident server, a sync)
// without waiting for it.
//
// Around the hook: Handler.StatusLine is the line an agent's status line
// shows, and PlanRewind settles, before a conversation rewind of a Claude
// Code session, the command that forks Claude's own conversation at the
// rewound turn (RewindPlan runs it).
package hook
