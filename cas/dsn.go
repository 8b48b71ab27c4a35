package cas

import (
	"strings"

	"github.com/ckpt/ckpt/migrations"
)

// dsnFor returns dsnParams for the database at path, without _auto_vacuum
// once the database exists: the setting only matters when the file is
// created, and re-applying it on every connection is a write transaction
// (a WAL commit with its fsyncs) on each open.
func dsnFor(path string) string {
	if !migrations.Created(path) {
		return dsnParams
	}
	return strings.Replace(dsnParams, "_auto_vacuum=incremental&", "", 1)
}
