package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"
)

// SyncResult says what a sync did for one session.
type SyncResult struct {
	Session       string `json:"session"`
	RemoteSession string `json:"remote_session"`
	// Status is "uploaded", "unchanged", "forked" (another writer had
	// moved the remote HEAD: uploaded under RemoteSession instead) or
	// "skipped" (Reason says why; nothing was written).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Packs  int    `json:"packs"` // packs uploaded
	Blobs  int    `json:"blobs"` // blobs in them
	Bytes  int64  `json:"bytes"` // bytes uploaded, packs and index
}

// String says what a sync did to one session, in one line for people:
// "s1: uploaded 3 blobs in 1 packs, 1.2 KiB", "s1: skipped: REASON".
func (s SyncResult) String() string {
	switch s.Status {
	case "uploaded":
		return fmt.Sprintf("%s: uploaded %d blobs in %d packs, %s", s.Session, s.Blobs, s.Packs, units.FormatBytes(s.Bytes))
	case "forked", "skipped":
		return fmt.Sprintf("%s: %s: %s", s.Session, s.Status, s.Reason)
	}
	return s.Session + ": " + s.Status
}

// Sync uploads what is new in the named sessions, or in every session of
// the store when none is named. It takes the store's sync lock (waiting for
// it when wait is set). A session that fails does not stop the others; the
// error joins every failure.
func (r *Remote) Sync(ctx context.Context, sessions []string, wait bool) ([]SyncResult, error) {
	unlock, err := r.Lock(ctx, wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if sessions == nil {
		if sessions, err = checkpoints.Sessions(r.store); err != nil {
			return nil, err
		}
	}
	gc, _, err := r.readGCState(ctx)
	if err != nil {
		return nil, fmt.Errorf("remote: gc state: %w", err)
	}
	r.condemned = gc.Candidates
	r.present = map[string]bool{}
	out := []SyncResult{}
	var errs []error
	for _, s := range sessions {
		res, err := r.syncSession(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", s, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// snapshot is one session's index as of one instant.
type snapshot struct {
	dir       string // holds index.db and index.db.zst
	sum       string // BLAKE3 of index.db
	zsize     int64
	turns     int
	planned   int
	workspace string
	refs      []cas.ID // distinct, sorted; lost references left out
}

// takeSnapshot copies the session's index with VACUUM INTO (a consistent
// snapshot that waits for no writer), compresses it, and reads what sync
// needs from the copy.
func (r *Remote) takeSnapshot(ctx context.Context, session string) (_ *snapshot, err error) {
	tmp, err := os.MkdirTemp(r.store, ".sync-")
	if err != nil {
		return nil, err
	}
	s := &snapshot{dir: tmp}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	path := filepath.Join(checkpoints.SessionDir(r.store, session), checkpoints.FileName)
	if !checkpoints.ValidSession(session) {
		return nil, fmt.Errorf("session %q: %w", session, checkpoints.ErrBadSession)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no session %s in this store: %w", session, err) // opening would create an empty index
	}
	live, err := sql.Open("sqlite", checkpoints.DSN(path))
	if err != nil {
		return nil, err
	}
	_, err = live.ExecContext(ctx, `VACUUM INTO ?`, filepath.Join(tmp, checkpoints.FileName))
	live.Close()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := s.compress(); err != nil {
		return nil, err
	}
	snap, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(tmp, checkpoints.FileName))+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	q := func(query string, dst any) error { return snap.QueryRowContext(ctx, query).Scan(dst) }
	if err := errors.Join(
		q(`SELECT count(*) FROM turns WHERE hidden_by IS NULL`, &s.turns),
		q(`SELECT count(*) FROM ops WHERE state = 'planned'`, &s.planned),
		q(`SELECT coalesce((SELECT value FROM meta WHERE key = 'workspace'), '')`, &s.workspace),
	); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	snap.Close()
	x, err := checkpoints.Open(ctx, tmp)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	seen := map[cas.ID]bool{}
	err = x.Refs(ctx, func(ref checkpoints.Ref) error {
		if !ref.Lost && !seen[ref.Blob] {
			seen[ref.Blob] = true
			s.refs = append(s.refs, ref.Blob)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(s.refs, func(i, j int) bool { return bytes.Compare(s.refs[i][:], s.refs[j][:]) < 0 })
	return s, nil
}

// compress writes index.db.zst and hashes index.db.
func (s *snapshot) compress() error {
	in, err := os.Open(filepath.Join(s.dir, checkpoints.FileName))
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(s.dir, "index.db.zst"))
	if err != nil {
		return err
	}
	defer out.Close()
	z, err := zstd.NewWriter(out, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return err
	}
	h := blake3.New()
	if _, err := io.Copy(io.MultiWriter(z, h), in); err != nil {
		z.Close()
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	fi, err := out.Stat()
	if err != nil {
		return err
	}
	s.sum, s.zsize = hex.EncodeToString(h.Sum(nil)), fi.Size()
	return out.Close()
}

func (r *Remote) syncSession(ctx context.Context, session string) (SyncResult, error) {
	res := SyncResult{Session: session, RemoteSession: session}
	last, synced, err := r.head(ctx, session)
	if err != nil {
		return res, err
	}
	if synced {
		res.RemoteSession = last.remoteSession
	}
	s, err := r.takeSnapshot(ctx, session)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(s.dir)
	if s.planned > 0 {
		res.Status, res.Reason = "skipped", "a rewind or undo is in progress; the next sync uploads it"
		return res, nil
	}
	if synced && last.indexSum == s.sum {
		res.Status = "unchanged"
		return res, nil
	}
	if synced && len(r.condemned) > 0 {
		// A collection may have repacked this session (and listed the old
		// packs): learn the new packs first rather than upload again.
		if last.etag, err = r.followRepack(ctx, res.RemoteSession, last.etag); err != nil {
			return res, err
		}
	}
	// 1. Packs: every referenced blob not yet known to be remote.
	packs, err := r.uploadBlobs(ctx, s.refs, &res)
	if err != nil {
		return res, err
	}
	// 2. The index snapshot; 3. HEAD.
	h := Head{Format: HeadFormat, Session: res.RemoteSession, IndexSize: s.zsize, IndexSum: s.sum,
		Packs: packs, Workspace: s.workspace, Turns: s.turns,
		Updated: time.Now().UTC().Format(time.RFC3339)}
	h.Host, _ = os.Hostname()
	cond := backend.PutCond{IfAbsent: true}
	if synced {
		cond = backend.PutCond{IfMatch: last.etag}
	}
	etag, err := r.putIndexAndHead(ctx, s, &h, cond, &res)
	for try := 0; synced && errors.Is(err, backend.ErrPrecondition) && try < 3; try++ {
		// A collection that repacked the session rewrote HEAD: nobody
		// else wrote it, so carry on from the rewritten HEAD (whose packs
		// this store learns) instead of forking.
		cur, curTag, rerr := r.ReadHead(ctx, res.RemoteSession)
		if rerr != nil || cur.RepackedFrom == "" || cur.RepackedFrom != last.etag {
			break
		}
		if err = r.adoptRepack(ctx, cur); err != nil {
			return res, err
		}
		if h.Packs, err = r.uploadBlobs(ctx, s.refs, &res); err != nil {
			return res, err
		}
		last.etag = curTag
		etag, err = r.putIndexAndHead(ctx, s, &h, backend.PutCond{IfMatch: curTag}, &res)
	}
	if errors.Is(err, backend.ErrPrecondition) {
		// Another writer moved HEAD (or made it first): fork.
		fork := forkID(res.RemoteSession)
		h.ForkOf, h.Session = res.RemoteSession, fork
		res.RemoteSession, res.Status = fork, "forked"
		res.Reason = fmt.Sprintf("the remote session %s was changed by another writer; uploaded as %s", h.ForkOf, fork)
		etag, err = r.putIndexAndHead(ctx, s, &h, backend.PutCond{IfAbsent: true}, &res)
	}
	if err != nil {
		return res, err
	}
	if res.Status == "" {
		res.Status = "uploaded"
	}
	return res, r.setHead(ctx, session, headRow{remoteSession: res.RemoteSession, etag: etag, indexSum: s.sum})
}

// followRepack learns the packs of the remote session's HEAD and returns
// its ETag when that HEAD is a collection's repack of the one with ETag
// etag (which this store wrote last); otherwise it returns etag.
func (r *Remote) followRepack(ctx context.Context, remoteSession, etag string) (string, error) {
	cur, curTag, err := r.ReadHead(ctx, remoteSession)
	if err != nil || cur.RepackedFrom == "" || cur.RepackedFrom != etag {
		return etag, nil
	}
	if err := r.adoptRepack(ctx, cur); err != nil {
		return etag, err
	}
	return curTag, nil
}

// forkID names a fork of session: the id, "-fork-" and 8 random hex digits,
// cut to stay a valid session id.
func forkID(session string) string {
	var b [4]byte
	rand.Read(b[:])
	suffix := "-fork-" + hex.EncodeToString(b[:])
	if len(session)+len(suffix) > 128 {
		session = session[:128-len(suffix)]
	}
	return session + suffix
}

// putIndexAndHead uploads the index under h.Session, then HEAD with cond.
// A HEAD write refused because the remote HEAD already holds exactly these
// bytes (our own earlier attempt, whose answer was lost) is a success.
func (r *Remote) putIndexAndHead(ctx context.Context, s *snapshot, h *Head, cond backend.PutCond, res *SyncResult) (string, error) {
	h.Index = "sessions/" + h.Session + "/index-" + s.sum + ".db.zst"
	f, err := os.Open(filepath.Join(s.dir, "index.db.zst"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := r.b.Put(ctx, h.Index, f, s.zsize, backend.PutCond{}); err != nil {
		return "", fmt.Errorf("upload index: %w", err)
	}
	res.Bytes += s.zsize
	r.progress(s.zsize)
	body, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return "", err
	}
	key := headKey(h.Session)
	etag, err := r.b.Put(ctx, key, bytes.NewReader(body), int64(len(body)), cond)
	if errors.Is(err, backend.ErrPrecondition) {
		// The remote HEAD already names this very index: our own write
		// whose answer was lost (retried by the client, or by this sync
		// after an earlier one failed), or another writer that reached the
		// same state. Either way there is nothing to fork.
		if cur, curTag, gerr := r.readHead(ctx, h.Session); gerr == nil {
			var ch Head
			if bytes.Equal(cur, body) || json.Unmarshal(cur, &ch) == nil && ch.Session == h.Session && ch.IndexSum == h.IndexSum && ch.Index == h.Index {
				return curTag, nil
			}
		}
	}
	return etag, err
}

// readHead returns the HEAD object's bytes and ETag, read so that they
// belong together (the ETag is checked on both sides of the read).
func (r *Remote) readHead(ctx context.Context, session string) ([]byte, string, error) {
	key := headKey(session)
	for try := 0; ; try++ {
		before, err := r.b.Stat(ctx, key)
		if err != nil {
			return nil, "", err
		}
		rc, err := r.b.Get(ctx, key, 0, before.Size)
		if err != nil {
			return nil, "", err
		}
		body, err := cas.ReadFull(rc, before.Size)
		rc.Close()
		if err != nil {
			return nil, "", err
		}
		after, err := r.b.Stat(ctx, key)
		if err != nil {
			return nil, "", err
		}
		if after.ETag == before.ETag {
			return body, after.ETag, nil
		}
		if try == 5 {
			return nil, "", fmt.Errorf("remote: HEAD of %s keeps changing", session)
		}
	}
}

// uploadBlobs uploads, in packs, every blob of refs the remote does not
// hold yet, and returns the packs that hold all of refs.
func (r *Remote) uploadBlobs(ctx context.Context, refs []cas.ID, res *SyncResult) ([]PackRef, error) {
	where := map[cas.ID]string{}
	var todo []cas.ID
	for _, id := range refs {
		var key string
		err := r.db.QueryRowContext(ctx, `SELECT pack FROM blob_packs WHERE remote = ? AND blob = ?`, r.url, id).Scan(&key)
		switch {
		case err == sql.ErrNoRows:
			todo = append(todo, id)
		case err != nil:
			return nil, err
		case r.condemned[key] != "":
			todo = append(todo, id) // a collector may be about to delete it: upload again
		default:
			ok, err := r.packPresent(ctx, key)
			if err != nil {
				return nil, err
			}
			if !ok {
				todo = append(todo, id)
				continue
			}
			where[id] = key
		}
	}
	var p packBuilder
	flush := func() error {
		if len(p.entries) == 0 {
			return nil
		}
		body, key := p.finish()
		ref := PackRef{Key: key, Size: int64(len(body)), Entries: len(p.entries)}
		if err := r.putPack(ctx, ref, bytes.NewReader(body)); err != nil {
			return err
		}
		if err := r.recordPack(ctx, ref, p.entries); err != nil {
			return err
		}
		for _, e := range p.entries {
			where[e.ID] = key
		}
		res.Packs++
		res.Blobs += len(p.entries)
		res.Bytes += ref.Size
		r.progress(ref.Size)
		p = packBuilder{}
		return nil
	}
	for _, id := range todo {
		s, rc, err := r.blobs.OpenStored(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("blob %s, referenced by the index: %w (ckpt verify checks the store)", id.Short(), err)
		}
		if s.Stored+trailerLen(1) > PackTarget {
			rc.Close()
			key, err := r.uploadAlone(ctx, s, res)
			if err != nil {
				return nil, err
			}
			where[id] = key
			continue
		}
		if !p.fits(s.Stored) {
			if err := flush(); err != nil {
				rc.Close()
				return nil, err
			}
		}
		err = p.add(s, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, id := range refs {
		keys[where[id]] = true
	}
	out := []PackRef{}
	for k := range keys {
		var ref PackRef
		err := r.db.QueryRowContext(ctx, `SELECT key, size, entries FROM packs WHERE remote = ? AND key = ?`, r.url, k).
			Scan(&ref.Key, &ref.Size, &ref.Entries)
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", k, err)
		}
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// putPack writes a pack. One already there holds the same bytes (its key is
// their hash); writing it again is harmless and renews its server time, which
// keeps a collector from deleting it within the margin.
func (r *Remote) putPack(ctx context.Context, ref PackRef, body io.Reader) error {
	if _, err := r.b.Put(ctx, ref.Key, body, ref.Size, backend.PutCond{}); err != nil {
		return fmt.Errorf("upload %s: %w", ref.Key, err)
	}
	return nil
}

// uploadAlone puts a blob too large to share a pack in a pack of its own,
// streaming it twice from the local store: once to name the pack by its
// hash, once to upload it.
func (r *Remote) uploadAlone(ctx context.Context, s cas.Stored, res *SyncResult) (string, error) {
	es := []Entry{{Stored: s, Off: 0}}
	tr := trailer(es)
	h := blake3.New()
	_, rc, err := r.blobs.OpenStored(ctx, s.ID)
	if err != nil {
		return "", err
	}
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil {
		return "", err
	}
	if n != s.Stored {
		return "", fmt.Errorf("blob %s: read %d stored bytes of %d: %w", s.ID.Short(), n, s.Stored, cas.ErrCorrupt)
	}
	h.Write(tr)
	ref := PackRef{Key: packKey(cas.ID(h.Sum(nil))), Size: s.Stored + int64(len(tr)), Entries: 1}
	_, rc, err = r.blobs.OpenStored(ctx, s.ID)
	if err != nil {
		return "", err
	}
	err = r.putPack(ctx, ref, io.MultiReader(io.LimitReader(rc, s.Stored), bytes.NewReader(tr)))
	rc.Close()
	if err != nil {
		return "", err
	}
	if err := r.recordPack(ctx, ref, es); err != nil {
		return "", err
	}
	res.Packs++
	res.Blobs++
	res.Bytes += ref.Size
	r.progress(ref.Size)
	return ref.Key, nil
}

// packPresent reports whether pack key, which this store's records say
// holds blobs, still exists on the remote. A pack another machine's
// collection deleted (listed as a candidate while this store did not
// sync, then a margin later gone) is forgotten here, and its blobs are
// uploaded again: a HEAD must never name a missing pack. Each pack is
// asked about once per Sync.
func (r *Remote) packPresent(ctx context.Context, key string) (bool, error) {
	if r.present == nil {
		r.present = map[string]bool{}
	}
	if ok, seen := r.present[key]; seen {
		return ok, nil
	}
	_, err := r.b.Stat(ctx, key)
	if errors.Is(err, cas.ErrNotFound) {
		for _, q := range []string{
			`DELETE FROM blob_packs WHERE remote = ? AND pack = ?`,
			`DELETE FROM packs WHERE remote = ? AND key = ?`,
		} {
			if _, err := r.db.ExecContext(ctx, q, r.url, key); err != nil {
				return false, err
			}
		}
		r.present[key] = false
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("remote: %s: %w", key, err)
	}
	r.present[key] = true
	return true, nil
}

// adoptRepack learns the packs a repacked HEAD names (their trailers, so
// uploadBlobs finds the blobs there) and reloads the collector's state, in
// which the packs they replace are now listed.
func (r *Remote) adoptRepack(ctx context.Context, h Head) error {
	for _, p := range h.Packs {
		var n int
		if err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM packs WHERE remote = ? AND key = ?`, r.url, p.Key).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		es, err := readTrailer(ctx, r.b, p.Key, p.Size, p.Entries)
		if err != nil {
			return fmt.Errorf("remote: %w", err)
		}
		if err := r.recordPack(ctx, p, es); err != nil {
			return err
		}
	}
	gc, _, err := r.readGCState(ctx)
	if err != nil {
		return fmt.Errorf("remote: gc state: %w", err)
	}
	r.condemned = gc.Candidates
	return nil
}
