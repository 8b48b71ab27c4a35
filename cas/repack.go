package cas

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Repacking: see doc.go, "Repacking".
const (
	// repackLevel is the zstd level of the whole frames Repack writes (one
	// per chain, its newest version), repackDeltaLevel that of its delta
	// frames. A collection runs rarely and off the capture path, so it
	// affords levels Put cannot. On the store-bytes benchmark's store
	// (1,008 whole versions, 9,992 deltas; gc CPU, blobs.db after):
	// whole SpeedBetterCompression and deltas SpeedDefault 5.3 s, 4.95 MB;
	// deltas at SpeedBetterCompression 13 s, 4.85 MB (each delta's
	// dictionary tables are rebuilt at that level); whole frames at
	// SpeedBestCompression 3.07 MB for 3.21 at SpeedBetterCompression,
	// for ~2 ms more per frame.
	repackLevel      = zstd.SpeedBestCompression
	repackDeltaLevel = zstd.SpeedDefault
	// repackMaxPlain bounds the plain bytes of one chain Repack holds in
	// memory; a larger chain is left as it is.
	repackMaxPlain = 64 << 20
	// repackMaxVacuum is the largest blobs.db Repack vacuums.
	repackMaxVacuum = 256 << 20
	// repackTxBytes is how many bytes of new frames a repack transaction
	// carries before it commits.
	repackTxBytes = 4 << 20
)

// RepackStats says what a Repack did.
type RepackStats struct {
	Chains   int   // delta chains re-encoded
	Blobs    int   // rows rewritten
	Saved    int64 // stored bytes saved
	Vacuumed bool  // blobs.db was rewritten to give the rows' slack back
}

// repackHook, when set (by tests), runs before each repack transaction
// commits; an error it returns rolls the transaction back.
var repackHook func() error

// repackNode is one row of a chain being repacked.
type repackNode struct {
	k, base int64 // base: the row's base key, 0 for a root
	id      ID
	size    int64
	enc     int
	stored  int64
	depth   int
	data    []byte
	plain   []byte

	// The new encoding.
	nbase  int64
	nenc   int
	ndepth int
	ndata  []byte
}

// changed reports whether the planned encoding differs from the row's.
func (n *repackNode) changed() bool {
	return n.nenc != n.enc || n.nbase != n.base || n.ndepth != n.depth || int64(len(n.ndata)) != n.stored
}

// Repack re-encodes the store's delta chains the way a pack is made once
// versions have settled: the newest version of each chain (the row with
// the highest key) whole, and every older one as a delta against its next
// newer neighbour in the chain, at a higher zstd level than Put uses. A
// chain whose newest version is already whole is left as it is, so a
// collection re-encodes only the chains that grew since the last one.
//
// A rewritten row keeps its key and its id; each new frame is decoded
// back and hashed against the id before its transaction commits, and a
// chain is rewritten only if no row of it changed since it was read and
// no new delta names one of its rows. Readers see a chain either before
// or after (one read is one query). Chains are read and encoded without
// any lock; each commit takes the collector lock (so the caller must not
// hold Collect's), under which no Put that holds the store is between
// encoding a delta and recording it. A Put that holds nothing records its
// delta at the depth its base has when it commits (record).
//
// A chain with a corrupt or unreadable row is left untouched: Repack
// never writes over damage, which verify reports.
func (d *Disk) Repack(ctx context.Context) (RepackStats, error) {
	if d.closed.Load() {
		return RepackStats{}, fmt.Errorf("cas: repack: %w", ErrClosed)
	}
	r := &repacker{d: d}
	err := r.run(ctx)
	if err == nil && r.moved > 0 {
		err = r.vacuum(ctx)
	}
	if err != nil {
		return r.st, fmt.Errorf("cas: repack: %w", err)
	}
	return r.st, nil
}

// repacker is one Repack's state.
type repacker struct {
	d *Disk
	// enc makes whole frames, denc delta frames (each sets a dictionary).
	enc, denc  *zstd.Encoder
	batch      [][]*repackNode
	batchBytes int
	moved      int64 // bytes of rows rewritten, before and after
	st         RepackStats
}

func (r *repacker) run(ctx context.Context) error {
	chains, err := r.d.repackChains(ctx)
	if err != nil || len(chains) == 0 {
		return err
	}
	for _, e := range []**zstd.Encoder{&r.enc, &r.denc} {
		level := repackLevel
		if e == &r.denc {
			level = repackDeltaLevel
		}
		if *e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(inlineMax), zstd.WithLowerEncoderMem(true)); err != nil {
			return err
		}
		defer (*e).Close()
	}
	for _, keys := range chains {
		if err := ctx.Err(); err != nil {
			// Cut short (a time budget): what is encoded is committed,
			// so a budget too small for the whole store still makes
			// progress from one collection to the next.
			return errors.Join(err, r.flush(context.WithoutCancel(ctx)))
		}
		nodes, err := r.d.repackLoad(ctx, keys)
		if err != nil {
			return err
		}
		if nodes == nil || !r.d.repackEncode(r.enc, r.denc, nodes) {
			continue
		}
		for _, n := range nodes {
			n.plain, n.data = nil, nil // a batch keeps only the new frames
			r.batchBytes += len(n.ndata)
		}
		r.batch = append(r.batch, nodes)
		if r.batchBytes >= repackTxBytes {
			if err := r.flush(ctx); err != nil {
				return err
			}
		}
	}
	return r.flush(ctx)
}

// flush commits the batch, under the collector lock: no Put that holds the
// store is between encoding a delta against one of its rows and recording
// it.
func (r *repacker) flush(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	release, err := r.d.gc.exclusive()
	if err != nil {
		return err
	}
	chains, rows, saved, err := r.d.repackCommit(ctx, r.batch)
	release()
	r.st.Chains += chains
	r.st.Blobs += rows
	r.st.Saved += saved
	for _, c := range r.batch {
		for _, n := range c {
			if n.nenc != n.enc || n.nbase != n.base || int64(len(n.ndata)) != n.stored {
				r.moved += n.stored + int64(len(n.ndata)) // not a depth alone: that leaves no slack
			}
		}
	}
	r.batch, r.batchBytes = r.batch[:0], 0
	return err
}

// vacuum gives back the slack rewritten rows leave. Rows rewritten in
// place leave their pages partly empty (a whole version turned into a
// delta of a few dozen bytes frees most of its page, which no later row
// fills); free pages alone would not give that back. When the rewrite
// touched an eighth of the database, VACUUM packs the rows again (keys,
// hence bases, are kept). It holds SQLite's write lock throughout, so only
// a database small enough to copy well within a writer's busy timeout is
// vacuumed; captures wait on the collector lock meanwhile.
func (r *repacker) vacuum(ctx context.Context) error {
	var live int64
	if err := r.d.db.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count) * (SELECT page_size FROM pragma_page_size)`).Scan(&live); err != nil {
		return err
	}
	if r.moved*8 < live || live > repackMaxVacuum {
		return nil
	}
	release, err := r.d.gc.exclusive()
	if err != nil {
		return err
	}
	defer release()
	if err := r.d.vacuum(ctx); err != nil {
		return err
	}
	r.st.Vacuumed = true
	return nil
}

// vacuum rewrites blobs.db compactly (SQLite's VACUUM: a copy of the live
// rows, committed as one write; readers go on meanwhile).
func (d *Disk) vacuum(ctx context.Context) error {
	return d.writeConn(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
		return nil
	})
}

// repackChains returns the keys of every delta chain (the rows linked by
// base keys, in either direction) whose newest row is a delta.
func (d *Disk) repackChains(ctx context.Context) ([][]int64, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT k, base FROM blobs WHERE enc = 2 AND typeof(base) = 'integer'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	parent := map[int64]int64{}
	var find func(int64) int64
	find = func(k int64) int64 {
		p, ok := parent[k]
		if !ok || p == k {
			parent[k] = k
			return k
		}
		r := find(p)
		parent[k] = r
		return r
	}
	deltas := map[int64]bool{}
	for rows.Next() {
		var k, b int64
		if err := rows.Scan(&k, &b); err != nil {
			return nil, err
		}
		deltas[k] = true
		if rk, rb := find(k), find(b); rk != rb {
			parent[rk] = rb
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	groups := map[int64][]int64{}
	for k := range parent {
		r := find(k)
		groups[r] = append(groups[r], k)
	}
	var out [][]int64
	for _, g := range groups {
		if deltas[slices.Max(g)] {
			slices.Sort(g)
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []int64) int { return int(a[0] - b[0]) })
	return out, nil
}

// repackLoad reads the rows of keys and decodes every one, verifying each
// against its id. It returns nil, and no error, for a chain that is not
// whole, not inline, too large, or damaged: such a chain is left alone.
func (d *Disk) repackLoad(ctx context.Context, keys []int64) ([]*repackNode, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT k, CASE WHEN base IS NULL THEN 0 WHEN typeof(base) = 'integer' THEN base ELSE -1 END, id, size, enc, stored, depth, data
		FROM blobs WHERE k IN (`+keyList(keys)+`)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byKey := map[int64]*repackNode{}
	var total int64
	for rows.Next() {
		n := &repackNode{}
		var id []byte
		if err := rows.Scan(&n.k, &n.base, &id, &n.size, &n.enc, &n.stored, &n.depth, &n.data); err != nil {
			return nil, err
		}
		if len(id) != len(ID{}) || n.data == nil || n.size > inlineMax || n.base < 0 || (n.enc == encDelta) != (n.base > 0) {
			return nil, nil
		}
		copy(n.id[:], id)
		total += n.size
		byKey[n.k] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(byKey) != len(keys) || total > repackMaxPlain {
		return nil, nil
	}
	nodes := make([]*repackNode, 0, len(keys))
	for _, k := range keys {
		nodes = append(nodes, byKey[k])
	}
	if !d.repackDecode(nodes, byKey) {
		return nil, nil
	}
	return nodes, nil
}

// repackDecode decodes a chain's rows, roots first and then each delta once
// its base is decoded, and hashes each against its id. It reports false
// on damage (verify's to report, not ours to rewrite), a cycle, or a base
// outside the chain.
func (d *Disk) repackDecode(nodes []*repackNode, byKey map[int64]*repackNode) bool {
	for done, progress := 0, true; done < len(nodes); {
		if !progress {
			return false
		}
		progress = false
		for _, n := range nodes {
			if n.plain != nil {
				continue
			}
			var b []byte
			var err error
			switch base := byKey[n.base]; {
			case n.enc == encRaw:
				b = n.data
			case n.enc == encZstd:
				b, err = d.codec.decode(n.data, n.size)
			case n.enc != encDelta || base == nil:
				return false
			case base.plain == nil:
				continue
			default:
				b, err = d.codec.decodeDelta(base.plain, n.data, n.size)
			}
			if err != nil || int64(len(b)) != n.size || Sum(b) != n.id {
				return false
			}
			if b == nil {
				b = []byte{}
			}
			n.plain = b
			done++
			progress = true
		}
	}
	return true
}

// repackEncode plans the new encoding of a chain loaded by repackLoad: the
// newest row whole, and, walking out from it along the chain's links,
// every other row a delta against the neighbour it was reached from, or
// whole when that neighbour is already maxDepth deep or the delta would
// not pay (Put's rule). Each new frame is decoded back and checked
// against its id. It reports whether the plan stores fewer bytes.
func (d *Disk) repackEncode(enc, denc *zstd.Encoder, nodes []*repackNode) bool {
	byKey := map[int64]*repackNode{}
	for _, n := range nodes {
		byKey[n.k] = n
	}
	return repackPlan(enc, denc, nodes, byKey) && d.repackCheck(nodes, byKey)
}

// repackPlan sets each row's new encoding (see repackEncode). It reports
// false when the links do not reach every row.
func repackPlan(enc, denc *zstd.Encoder, nodes []*repackNode, byKey map[int64]*repackNode) bool {
	adj := map[int64][]*repackNode{}
	newest := nodes[0]
	for _, n := range nodes {
		if n.k > newest.k {
			newest = n
		}
		if n.base > 0 {
			b := byKey[n.base]
			adj[n.k] = append(adj[n.k], b)
			adj[b.k] = append(adj[b.k], n)
		}
	}
	whole := func(n *repackNode) {
		n.nbase, n.ndepth = 0, 0
		if n.enc != encDelta {
			n.ndata, n.nenc = n.data, n.enc // whole already: kept as it is
			return
		}
		n.ndata, n.nenc = n.plain, encRaw
		if len(n.plain) >= minCompress {
			if z := enc.EncodeAll(n.plain, nil); len(z) <= len(n.plain)-len(n.plain)/32 {
				n.ndata, n.nenc = z, encZstd
			}
		}
	}
	whole(newest)
	seen := map[int64]bool{newest.k: true}
	for queue := []*repackNode{newest}; len(queue) > 0; queue = queue[1:] {
		from := queue[0]
		for _, n := range adj[from.k] {
			if seen[n.k] {
				continue
			}
			seen[n.k] = true
			queue = append(queue, n)
			switch {
			case from.ndepth >= maxDepth || len(from.plain) < minCompress || len(n.plain) < minCompress:
				whole(n)
			case n.base == from.k:
				// A delta against the same base already: kept, at its
				// new depth. Only rows whose base changes are encoded.
				n.nbase, n.ndepth, n.ndata, n.nenc = from.k, from.ndepth+1, n.data, encDelta
			default:
				n.nbase, n.ndepth, n.nenc = from.k, from.ndepth+1, encDelta
				if denc.ResetWithOptions(nil, zstd.WithEncoderDictRaw(dictID, from.plain)) != nil {
					whole(n)
					continue
				}
				n.ndata = bareFrame(denc.EncodeAll(n.plain, nil), len(n.plain))
				// Put's rule: under 1/16 of the content, or a quarter
				// smaller than the whole frame.
				if z := n.ndata; len(z) > len(n.plain)/16 {
					if whole(n); len(z) <= len(n.ndata)-len(n.ndata)/4 {
						n.nbase, n.ndepth, n.ndata, n.nenc = from.k, from.ndepth+1, z, encDelta
					}
				}
			}
		}
	}
	return len(seen) == len(nodes)
}

// repackCheck decodes every planned frame, against its new base's plain
// bytes, and checks it gives exactly the bytes whose hash is the row's id.
// It reports whether all do and the plan stores fewer bytes.
func (d *Disk) repackCheck(nodes []*repackNode, byKey map[int64]*repackNode) bool {
	var before, after int64
	for _, n := range nodes {
		before += n.stored
		after += int64(len(n.ndata))
		var b []byte
		var err error
		switch n.nenc {
		case encRaw:
			b = n.ndata
		case encZstd:
			b, err = d.codec.decode(n.ndata, n.size)
		case encDelta:
			b, err = d.codec.decodeDelta(byKey[n.nbase].plain, n.ndata, n.size)
		}
		if err != nil || int64(len(b)) != n.size || Sum(b) != n.id {
			return false
		}
		if n.nenc == encRaw && n.enc != encRaw {
			n.ndata = slices.Clone(n.ndata) // not the decoded buffer a raw row shares
		}
	}
	return after < before
}

// repackCommit writes the planned chains in one transaction. A chain any
// of whose rows changed since it was read, or that a new delta names as
// base, is skipped. It returns the chains written and the bytes saved.
func (d *Disk) repackCommit(ctx context.Context, chains [][]*repackNode) (n, rows int, saved int64, err error) {
	err = d.update(ctx, func(tx *sql.Tx) error {
		n, rows, saved = 0, 0, 0
		for _, nodes := range chains {
			ok, err := repackUnchanged(ctx, tx, nodes)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			for _, r := range nodes {
				if !r.changed() {
					continue
				}
				var base any
				if r.nenc == encDelta {
					base = r.nbase
				}
				if _, err := tx.ExecContext(ctx, `UPDATE blobs SET stored = ?, enc = ?, depth = ?, base = ?, data = ? WHERE k = ?`,
					len(r.ndata), r.nenc, r.ndepth, base, r.ndata, r.k); err != nil {
					return err
				}
				saved += r.stored - int64(len(r.ndata))
				rows++
			}
			n++
		}
		if repackHook != nil {
			if err := repackHook(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	return n, rows, saved, nil
}

// repackUnchanged reports whether a chain's rows are as repackLoad read
// them and no row outside it is a delta against one of them.
func repackUnchanged(ctx context.Context, tx *sql.Tx, nodes []*repackNode) (bool, error) {
	keys := make([]int64, len(nodes))
	for i, r := range nodes {
		keys[i] = r.k
	}
	list := keyList(keys)
	rows, err := tx.QueryContext(ctx, `SELECT k, id, enc, stored, CASE WHEN base IS NULL THEN 0 WHEN typeof(base) = 'integer' THEN base ELSE -1 END FROM blobs WHERE k IN (`+list+`)`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	byKey := map[int64]*repackNode{}
	for _, r := range nodes {
		byKey[r.k] = r
	}
	seen := 0
	for rows.Next() {
		var k, stored, base int64
		var id []byte
		var enc int
		if err := rows.Scan(&k, &id, &enc, &stored, &base); err != nil {
			return false, err
		}
		r := byKey[k]
		if r == nil || len(id) != len(ID{}) || ID(id) != r.id || enc != r.enc || stored != r.stored || base != r.base {
			return false, nil
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	if seen != len(nodes) {
		return false, nil
	}
	var outside bool
	err = tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM blobs WHERE base IN (`+list+`) AND k NOT IN (`+list+`))`).Scan(&outside)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	return !outside, err
}

// keyList formats keys for an IN list (integers only, never user input).
func keyList(keys []int64) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(k, 10))
	}
	return b.String()
}
