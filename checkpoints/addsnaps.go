package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
)

// AddSnaps is AddSnap for many snapshots of one turn in one transaction:
// one commit for all of them, so `ckpt capture` of many paths and a hook
// event pay for one. added[i] reports whether snaps[i] was recorded (false
// when the turn already had that path, an earlier entry of snaps
// included: the first capture wins; or, for a snapshot with a Step, when
// that step of the turn had it). It records nothing when it fails; a
// turn a rewind has hidden fails with ErrNoOpenTurn.
func (x *Index) AddSnaps(ctx context.Context, turnID int64, snaps []FileSnap) ([]bool, error) {
	added := make([]bool, len(snaps))
	if len(snaps) == 0 {
		return added, nil
	}
	err := x.write(ctx, func(tx *sql.Tx) error {
		var hidden sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT hidden_by FROM turns WHERE id = ?`, turnID).Scan(&hidden); err != nil {
			return notFound(err)
		}
		if hidden.Valid {
			return ErrNoOpenTurn
		}
		stmt := tx.StmtContext(ctx, x.stmts.addSnap)
		for i, f := range snaps {
			seq, err := tick(ctx, tx)
			if err != nil {
				return err
			}
			if added[i], err = addSnap(ctx, tx, stmt, turnID, seq, f); err != nil {
				return fmt.Errorf("%s: %w", f.Path, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: add snaps: %w", err)
	}
	return added, nil
}
