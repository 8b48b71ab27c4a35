package migrations

import (
	"context"
	"database/sql"
)

// SetUseBase turns creating new databases from a base schema on or off,
// and returns the previous setting.
func SetUseBase(on bool) bool {
	old := useBase
	useBase = on
	return old
}

// ApplyUpTo brings db to version v of set, migration by migration.
func ApplyUpTo(ctx context.Context, db *sql.DB, set Set, v int) error {
	ms, err := set.List()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version > v {
			break
		}
		if err := applyOne(ctx, db, set, m); err != nil {
			return err
		}
	}
	return nil
}
