// Package mcpserver serves one controller.Controller as Model Context
// Protocol tools, on the official Go SDK (github.com/modelcontextprotocol/go-sdk):
// list_checkpoints, show_diff, rewind, undo, redo, history and status.
// `ckpt mcp` is this server on stdin/stdout (the Stdio transport); an agent
// or an IDE starts it as an MCP server and calls the tools.
//
// It holds no rewind logic: every tool call is one or two Controller calls,
// and the tools' JSON fields are those of the CLI's --json output.
//
// Contract:
//   - Inputs and outputs are typed: each tool's JSON schemas come from its
//     Go structs; unknown arguments are refused. Lists are [] never null.
//   - A failure is a tool error (isError, one line of text naming what went
//     wrong and what to call instead), never a protocol error, so the model
//     sees it and the session goes on.
//   - A rewind, undo or redo that would overwrite work done since (a
//     conflict) changes nothing unless called with force: true; its result
//     is then an error that still carries the structured result with the
//     conflicting paths. A dry run reports conflicts and never fails on them.
//   - Tool calls are served one at a time: the controller's op lock
//     serialises processes, not goroutines of one process.
package mcpserver
