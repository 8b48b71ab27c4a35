// Package agent is ckpt's knowledge of the coding agents it hooks into:
// how each agent's hook events become what ckpt records (Decode), what the
// agent expects back on stdout (Reply), and how its hook configuration is
// installed, removed, found and checked (Install, Markers, Detect,
// Installed, UserInstalled, Checker). It touches no store: applying a
// decoded Plan to a session is package agent/hook's job, through package
// controller;
// installing, removing and checking the hooks of several agents at once,
// with the store's side of it (scan mode, the directories install made,
// the hook server's tokens), is package agent/setup's. A desktop app can
// install an agent's hooks and decode its events with this package alone.
//
// # The registry
//
// Every agent registers itself in an init function of its own file
// (claude.go, codex.go, gemini.go, ...). Lookup finds one by the NAME of
// `ckpt hook|install|uninstall NAME`; Names and All list them, Claude Code
// first, then by name. "generic", the Claude-shaped protocol any agent
// can speak, is found by Lookup but not listed: it has nothing to install.
//
// # Adding an agent
//
// One file, NAME.go, holds everything about the agent:
//
//   - a comment saying where its hooks live and which of its events ckpt
//     takes (and which end its answer: they plan a background sync);
//   - an init function calling registerSpec with a spec: name, title,
//     decode, reply (nil when the agent reads nothing on stdout), install,
//     check (optional: makes the agent a Checker) and its Markers
//     (workspace files, commands, home directories, where Install writes,
//     the files holding the installed commands, a probe prompt event for
//     `ckpt install --check`, and whether it loads a workspace's hooks
//     from a subdirectory);
//   - decode: unmarshal the agent's event into its own struct, fill a
//     normEvent (kind "prompt" or "tool", session, cwd, prompt, tool
//     name, paths about to be written, whether a shell runs) and return
//     normEvent.plan, which applies the checks every agent shares; an
//     event that ends the answer returns syncPlan(), one with nothing to
//     do Plan{None: true}, an unknown one unknownEvent. A Claude-shaped
//     agent uses decodeClaudeStyle/planClaudeStyle (codex.go);
//   - install: with installGroups (Claude-style matcher groups in a JSON
//     settings file), installFlat (flat hooks.json arrays) or installFiles
//     (a hook script or plugin ckpt owns whole), which keep everything
//     that is not ckpt's byte for byte and report through Env.Report;
//   - fixtures of its real events in testdata/hooks/NAME, and cases in
//     TestAgentDecode.
//
// Claude Code (claude.go) implements Agent directly, being more than a
// spec: it is a Conversation (ckpt records where each turn begins in its
// transcript, so a rewind can fork the conversation as well) and
// HTTPHooks (its tool calls may post to the resident hook server).
package agent
