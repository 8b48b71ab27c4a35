// Package migrations holds ckpt's SQLite schemas as embedded, numbered SQL
// files and applies them.
//
// There are three schema sets: Index (one database per session: turns, file
// snapshots, the conversation and the rewind journal), CAS (the blob store's
// database) and Catalog (the store's cache of session summaries). Each set is
// a directory of files named NNNN_name.sql.
// Apply runs the files whose number is above the database's recorded
// version, in order, each in its own transaction together with the row that
// records it in the schema_migrations table. Applying twice is a no-op. A
// file whose first line is "-- ckpt: foreign_keys off" (one that rebuilds
// tables) runs with foreign keys off and commits only when
// PRAGMA foreign_key_check finds every reference intact.
//
// Invariants:
//   - A migration that has shipped is never edited; a schema change is a new
//     file with the next number.
//   - A database whose recorded version is newer than the highest file this
//     binary embeds is refused with an error wrapping ErrTooNew, before
//     anything is written, so an old binary never scribbles on a new schema.
//   - Numbers within a set are unique and start at 1.
package migrations
