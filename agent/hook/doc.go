// Package hook applies agents' hook events to a store's sessions: the one
// implementation of ckpt's hook, whether it runs as a process per event
// (Handler.Handle, what `ckpt hook AGENT` does) or resident (Server, the
// http.Handler `ckpt serve` mounts at /hook/).
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
// the event's workspace.
package hook
