package cas

import (
	"context"
	"database/sql"
	"sync"
)

// lazyStmt is a statement prepared on its first use. A ckpt command opens
// the store, uses two or three of its statements and exits; preparing all
// of them at open parsed SQL the command never ran (in a whole-process
// capture, preparing blobs.db's five statements was ~4% of its CPU).
type lazyStmt struct {
	db    *sql.DB
	query string

	mu sync.Mutex
	st *sql.Stmt
}

// get returns the prepared statement, preparing it if this is its first
// use. A failed preparation is not kept: the next use tries again.
func (l *lazyStmt) get(ctx context.Context) (*sql.Stmt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st == nil {
		st, err := l.db.PrepareContext(ctx, l.query)
		if err != nil {
			return nil, err
		}
		l.st = st
	}
	return l.st, nil
}

func (l *lazyStmt) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		l.st.Close()
		l.st = nil
	}
}
