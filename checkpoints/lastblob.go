package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ckpt/ckpt/cas"
)

// LastBlob returns the most recent content this session recorded for path
// (the end state of its latest snapshot if known, else that snapshot's
// start), and false when it recorded none. The blob store takes it as the
// base to store the path's next version as a delta (cas.WithBaseFunc). One
// indexed query; a capture has it from CapturingIn (Capturing.Last).
func (x *Index) LastBlob(ctx context.Context, path string) (cas.ID, bool, error) {
	var last []byte
	err := x.db.QueryRowContext(ctx, lastBlobSQL, path).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return cas.ID{}, false, nil
	}
	if err != nil {
		return cas.ID{}, false, fmt.Errorf("checkpoints: last blob of %s: %w", path, err)
	}
	var id cas.ID
	if len(last) != len(id) {
		return cas.ID{}, false, nil
	}
	copy(id[:], last)
	return id, true, nil
}

// lastBlobSQL returns the content LastBlob names for the path ?1: NULL
// (or no row) when there is none. capturingSQL asks it too, so a capture
// has its delta base from the query it makes anyway.
const lastBlobSQL = `SELECT CASE WHEN length(end_blob) = 32 THEN end_blob ELSE blob END
	FROM named_snaps WHERE path = ?1 ORDER BY seq DESC LIMIT 1`
