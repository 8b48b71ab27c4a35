package cas

import (
	"strings"

	"github.com/ckpt/ckpt/migrations"
)

// pageSize is the page size of a new blobs.db (doc.go has the
// measurements). The DSN's page_size does not reach a new file: the driver
// applies _auto_vacuum before the _pragma list, and on a new file that
// pragma is a write that fixes the default 4 KiB page size. So OpenDisk
// creates the file first with migrations.Create (page size, auto-vacuum,
// WAL, in that order). A blobs.db made with 512-byte pages, before new
// stores got 2048, keeps them: a database in WAL mode keeps the page size
// it was created with, and SQLite reads it from the file's header, so both
// work alike (docs/performance.md says why no migration rewrites them).
const pageSize = 2048

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
