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
// indexed query.
func (x *Index) LastBlob(ctx context.Context, path string) (cas.ID, bool, error) {
	var blob, end []byte
	err := x.db.QueryRowContext(ctx, `SELECT blob, end_blob FROM snaps WHERE path = ? ORDER BY seq DESC LIMIT 1`, path).
		Scan(&blob, &end)
	if errors.Is(err, sql.ErrNoRows) {
		return cas.ID{}, false, nil
	}
	if err != nil {
		return cas.ID{}, false, fmt.Errorf("checkpoints: last blob of %s: %w", path, err)
	}
	if len(end) != len(cas.ID{}) {
		end = blob
	}
	var id cas.ID
	if len(end) != len(id) {
		return cas.ID{}, false, nil
	}
	copy(id[:], end)
	return id, true, nil
}
