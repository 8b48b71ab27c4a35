package checkpoints

import (
	"context"
	"database/sql"
	"fmt"
)

// Relabel gives the open turn the prompt to, in the turn and in its user
// message, when its prompt is still from: a turn an agent opened before it
// could know the prompt (Cline's CLI starts a run with an event that does
// not carry it) gets it once a later event shows it. It reports whether it
// changed the turn; with no open turn, or one labelled otherwise, it
// changes nothing.
func (x *Index) Relabel(ctx context.Context, from, to string) (bool, error) {
	done := false
	err := x.write(ctx, func(tx *sql.Tx) error {
		cp, err := openTurn(ctx, tx)
		if err == ErrNoOpenTurn || (err == nil && cp.Prompt != from) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET prompt = ? WHERE id = ?`, to, cp.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET text = ? WHERE turn_id = ? AND role = 'user' AND text = ?`, to, cp.ID, from); err != nil {
			return err
		}
		done = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("checkpoints: relabel the open turn: %w", err)
	}
	return done, nil
}
