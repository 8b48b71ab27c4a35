// Package acpproxy puts ckpt between an editor and an Agent Client
// Protocol (ACP) agent: JSON-RPC 2.0 messages, one per line, from the
// editor (the client) to the agent and back. Every message is forwarded as
// the bytes it came in, except:
//
//   - session/new, session/load (and the unstable session/resume) map
//     the ACP session to a ckpt session whose workspace is the session's
//     cwd, or the workspace the store knows that encloses it (SessionID
//     names the session); the unstable session/fork maps the new
//     session to a ckpt fork of the source's after its last turn, whose
//     parent link names the source session and that turn;
//   - session/prompt opens a ckpt turn, its text the label, in scan mode:
//     the workspace's manifest covers what the agent's terminals
//     (terminal/create) and an agent writing files itself change;
//   - fs/write_text_file, the agent asking the editor to write a file, is
//     forwarded only once the file is captured, in a step keyed by the tool
//     call the agent announced last (its toolCallId);
//   - available_commands_update gets /rewind, /undo, /redo and
//     /checkpoints added, and a session/prompt invoking one of them is
//     answered by the proxy (session/update agent message chunks and a
//     stopReason end_turn response) and never reaches the agent.
//
// It decodes only the messages it acts on, into small structs of the
// fields it reads; anything else (unknown methods, batches, lines that are
// not JSON) passes through untouched. It uses package controller only.
package acpproxy
