// Package wire holds the JSON documents every ckpt front-end emits: the
// CLI's --json output, the HTTP API's responses and the MCP server's tool
// results. A turn, a rewind result, a diff, a history entry or a session
// has one shape here, so the three cannot drift apart; docs/json.md
// describes the same shapes for people.
//
// Each type is built from the controller's values by a New… function. The
// functions never return a nil list: a list with nothing in it is [] in
// JSON, never null (the CLI contract, and what an MCP output schema
// checks). A field tagged omitzero is the one exception: nil there means
// "not asked for", and the field is left out.
//
// Paths are workspace-relative and slash-separated. JSON strings cannot
// carry bytes that are not UTF-8, so a path with such bytes also travels
// as its exact bytes, base64: in a path_bytes field beside it, or, where
// paths sit in plain string lists, in a document-level path_bytes object
// mapping each such path's JSON string to its bytes.
//
// The documents also have a text form for people, what the CLI prints
// without --json (text.go, list.go): a result's summary (Result.WriteText,
// WriteReversal), the list of turns (CheckpointList, which streams its
// JSON array too), the sessions and history tables (WriteSessions,
// WriteHistory), the open turn's changes, the conversation, a diff and a
// fork (WriteChanges, WriteMessages, WriteDiff, WriteFork). Each writes
// the data on one writer and the messages about it on another, as the CLI
// puts them on stdout and stderr, so any front-end that words them for
// people words them alike.
//
// The package depends on controller (and, for its text, the leaf packages
// that quote paths, word sizes and shorten lines, and stream a JSON
// array); controller does not know it.
// Front-ends add what is theirs alone by embedding a type here (the MCP
// server's summary, the CLI's claude_resume).
package wire
