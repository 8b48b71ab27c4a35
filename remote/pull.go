package remote

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/capture"
	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/blake3"
)

// ErrSessionExists is wrapped when a pull would replace a local session.
var ErrSessionExists = errors.New("session exists in this store")

// PullOptions say what to pull and where to put it.
type PullOptions struct {
	Session string // the remote session id
	// As is the local session id. When empty: the default session of
	// Workspace when that is set (so commands run there find it), else
	// Session.
	As string
	// Workspace re-points the pulled session to this directory (created
	// if missing), for a machine where the workspace lives elsewhere. Empty
	// keeps the workspace the session was captured in.
	Workspace string
}

// PullResult says what a pull did.
type PullResult struct {
	Session       string `json:"session"`
	RemoteSession string `json:"remote_session"`
	Workspace     string `json:"workspace"`
	Turns         int    `json:"turns"`
	Blobs         int    `json:"blobs"` // blobs fetched (the store had the others)
	Bytes         int64  `json:"bytes"` // bytes fetched
}

// ReadHead fetches and decodes a session's HEAD, with its ETag.
func (r *Remote) ReadHead(ctx context.Context, session string) (Head, string, error) {
	var h Head
	if !checkpoints.ValidSession(session) {
		return h, "", fmt.Errorf("remote: session %q: %w", session, checkpoints.ErrBadSession)
	}
	body, etag, err := r.readHead(ctx, session)
	if err != nil {
		if errors.Is(err, cas.ErrNotFound) {
			return h, "", fmt.Errorf("remote: no session %s on %s: %w", session, r.b, cas.ErrNotFound)
		}
		return h, "", err
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, "", fmt.Errorf("remote: HEAD of %s: %w: %v", session, cas.ErrCorrupt, err)
	}
	if h.Format != HeadFormat {
		return h, "", fmt.Errorf("remote: HEAD of %s has format %d; this ckpt reads %d", session, h.Format, HeadFormat)
	}
	if h.Session != session || !strings.HasPrefix(h.Index, "sessions/"+session+"/") {
		return h, "", fmt.Errorf("remote: HEAD of %s names session %s, index %s: %w", session, h.Session, h.Index, cas.ErrCorrupt)
	}
	return h, etag, nil
}

// Sessions lists the remote's sessions, by id.
func (r *Remote) Sessions(ctx context.Context) ([]Head, error) {
	ids, err := r.sessionIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := []Head{}
	for _, id := range ids {
		h, _, err := r.ReadHead(ctx, id)
		if errors.Is(err, cas.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return out, err
		}
		out = append(out, h)
	}
	return out, nil
}

// Pull fetches a session's index and every blob it references that the
// local store lacks, and installs the index as a local session.
func (r *Remote) Pull(ctx context.Context, o PullOptions) (PullResult, error) {
	res := PullResult{RemoteSession: o.Session, Session: o.As}
	ws, err := pullTarget(o, &res)
	if err != nil {
		return res, err
	}
	unlock, err := r.Lock(ctx, true)
	if err != nil {
		return res, err
	}
	defer unlock()
	dst, err := r.freeSessionDir(res.Session)
	if err != nil {
		return res, err
	}
	h, etag, err := r.ReadHead(ctx, o.Session)
	if err != nil {
		return res, err
	}
	res.Turns, res.Workspace = h.Turns, h.Workspace
	if err := os.MkdirAll(filepath.Join(r.store, "sessions"), 0o755); err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(r.store, "sessions"), ".pull-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	if err := r.fetchIndex(ctx, h, filepath.Join(tmp, checkpoints.FileName)); err != nil {
		return res, err
	}
	need, err := neededBlobs(ctx, tmp)
	if err != nil {
		return res, err
	}
	// The fetched blobs are unreferenced until the index is in place: hold
	// the store against a collection until then, as a capture does.
	release, err := r.blobs.Hold(ctx)
	if err != nil {
		return res, err
	}
	defer release()
	if err := r.fetchBlobs(ctx, h, need, &res); err != nil {
		return res, err
	}
	if err := r.haveAll(ctx, o.Session, need); err != nil {
		return res, err
	}
	if err := repoint(ctx, tmp, ws); err != nil {
		return res, err
	}
	if ws != "" {
		res.Workspace = ws
	}
	if err := os.Rename(tmp, dst); err != nil {
		return res, fmt.Errorf("remote: install %s: %w", res.Session, err)
	}
	if err := checkpoints.Register(r.store, res.Session); err != nil {
		return res, fmt.Errorf("remote: install %s: %w", res.Session, err)
	}
	release()
	if ws != "" {
		// Opening it once records DIR as a workspace of the store, so
		// ckpt run in a subdirectory of DIR finds the session too.
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: res.Session, Store: r.store, NoAutoRetention: true})
		if err != nil {
			return res, fmt.Errorf("remote: open the pulled session: %w", err)
		}
		c.Close()
	}
	// Record the installed index as in sync with the HEAD pulled, so that
	// a sync uploads it (if-match on that HEAD) only once it changes here.
	// Its sum is taken as sync takes it: repoint changed the bytes.
	sum := "pulled:" + h.IndexSum
	if s, err := r.takeSnapshot(ctx, res.Session); err == nil {
		sum = s.sum
		os.RemoveAll(s.dir)
	}
	return res, r.setHead(ctx, res.Session, headRow{remoteSession: o.Session, etag: etag, indexSum: sum})
}

// pullTarget returns the workspace a pull goes to (its root, created if
// missing; "" for none) and sets res.Session to the local id: o.As, else
// the workspace's own session, else the remote id.
func pullTarget(o PullOptions, res *PullResult) (string, error) {
	var ws string
	if o.Workspace != "" {
		if err := os.MkdirAll(o.Workspace, 0o755); err != nil {
			return "", err
		}
		w, err := capture.NewWorkspace(o.Workspace)
		if err != nil {
			return "", err
		}
		ws = w.Root()
	}
	switch {
	case res.Session != "":
	case ws != "":
		// The workspace's own default session: commands run in it, and
		// the agent's hooks there, continue the pulled session.
		res.Session = controller.WorkspaceSession(ws)
	default:
		res.Session = o.Session
	}
	if !checkpoints.ValidSession(res.Session) {
		return "", fmt.Errorf("remote: session %q: %w", res.Session, checkpoints.ErrBadSession)
	}
	return ws, nil
}

// freeSessionDir returns the directory of session, which must not exist
// in the store: a pull never installs over a local session.
func (r *Remote) freeSessionDir(session string) (string, error) {
	dst := checkpoints.SessionDir(r.store, session)
	if has, err := checkpoints.HasSession(r.store, session); err != nil {
		return "", err
	} else if _, serr := os.Stat(dst); serr == nil || has {
		return "", fmt.Errorf("remote: pull into %s: %w (pull it under another id with --as ID)", session, ErrSessionExists)
	}
	return dst, nil
}

// haveAll checks that the store holds every blob in need, which remote
// session's index names.
func (r *Remote) haveAll(ctx context.Context, session string, need map[cas.ID]bool) error {
	for id := range need {
		if ok, err := r.blobs.Has(ctx, id); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("remote: session %s names blob %s that none of its packs holds: %w", session, id.Short(), cas.ErrCorrupt)
		}
	}
	return nil
}

// fetchIndex downloads and decompresses the index to path, checking its
// hash against the HEAD's.
func (r *Remote) fetchIndex(ctx context.Context, h Head, path string) error {
	rc, err := r.b.Get(ctx, h.Index, 0, h.IndexSize)
	if err != nil {
		return fmt.Errorf("remote: index of %s: %w", h.Session, err)
	}
	defer rc.Close()
	z, err := zstd.NewReader(rc, zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer z.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	hs := blake3.New()
	if _, err := io.Copy(io.MultiWriter(f, hs), z); err != nil {
		return fmt.Errorf("remote: index of %s: %w: %v", h.Session, cas.ErrCorrupt, err)
	}
	if sum := hex.EncodeToString(hs.Sum(nil)); sum != h.IndexSum {
		return fmt.Errorf("remote: index of %s hashes to %.12s, HEAD says %.12s: %w", h.Session, sum, h.IndexSum, cas.ErrCorrupt)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// neededBlobs lists the blobs the index in dir references (lost ones aside).
func neededBlobs(ctx context.Context, dir string) (map[cas.ID]bool, error) {
	x, err := checkpoints.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	need := map[cas.ID]bool{}
	err = x.Refs(ctx, func(ref checkpoints.Ref) error {
		if !ref.Lost {
			need[ref.Blob] = true
		}
		return nil
	})
	return need, err
}

// fetchBlobs reads each pack's trailer and fetches the needed blobs the
// store lacks: one ranged read per pack covering them, or one per blob for
// a pack larger than twice the target.
func (r *Remote) fetchBlobs(ctx context.Context, h Head, need map[cas.ID]bool, res *PullResult) error {
	for _, p := range h.Packs {
		es, err := readTrailer(ctx, r.b, p.Key, p.Size, p.Entries)
		if err != nil {
			return fmt.Errorf("remote: %w", err)
		}
		var want []Entry
		for _, e := range es {
			if !need[e.ID] {
				continue
			}
			if ok, err := r.blobs.Has(ctx, e.ID); err != nil {
				return err
			} else if !ok {
				want = append(want, e)
			}
		}
		if len(want) > 0 {
			if err := r.fetchFrom(ctx, p, want, res); err != nil {
				return err
			}
		}
		if err := r.recordPack(ctx, p, es); err != nil {
			return err
		}
	}
	return nil
}

func (r *Remote) fetchFrom(ctx context.Context, p PackRef, want []Entry, res *PullResult) error {
	lo, hi := want[0].Off, int64(0)
	for _, e := range want {
		lo, hi = min(lo, e.Off), max(hi, e.Off+e.Stored.Stored)
	}
	if hi-lo > 2*PackTarget {
		for _, e := range want {
			rc, err := r.b.Get(ctx, p.Key, e.Off, e.Stored.Stored)
			if err != nil {
				return fmt.Errorf("remote: %s: %w", p.Key, err)
			}
			err = r.blobs.PutStored(ctx, e.Stored, rc)
			rc.Close()
			if err != nil {
				return fmt.Errorf("remote: %s: %w", p.Key, err)
			}
			res.Blobs++
			res.Bytes += e.Stored.Stored
			r.progress(e.Stored.Stored)
		}
		return nil
	}
	rc, err := r.b.Get(ctx, p.Key, lo, hi-lo)
	if err != nil {
		return fmt.Errorf("remote: %s: %w", p.Key, err)
	}
	span, err := cas.ReadFull(rc, hi-lo)
	rc.Close()
	if err != nil {
		return fmt.Errorf("remote: %s: %w", p.Key, err)
	}
	res.Bytes += hi - lo
	r.progress(hi - lo)
	// Small blobs are recorded in one transaction; large ones one by one.
	var small []cas.Stored
	var frames [][]byte
	for _, e := range want {
		frame := span[e.Off-lo : e.Off-lo+e.Stored.Stored]
		if e.Size <= cas.MaxInline {
			small, frames = append(small, e.Stored), append(frames, frame)
		} else if err := r.blobs.PutStored(ctx, e.Stored, bytes.NewReader(frame)); err != nil {
			return fmt.Errorf("remote: %s: %w", p.Key, err)
		}
		res.Blobs++
	}
	if err := r.blobs.PutStoredInline(ctx, small, frames); err != nil {
		return fmt.Errorf("remote: %s: %w", p.Key, err)
	}
	return nil
}

// repoint prepares a pulled index for this machine: the stat cache, which
// describes files on the machine that captured, is dropped, and the
// workspace is set to ws when given.
func repoint(ctx context.Context, dir, ws string) error {
	db, err := sql.Open("sqlite", checkpoints.DSN(filepath.Join(dir, checkpoints.FileName)))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DELETE FROM statcache`); err != nil {
		return fmt.Errorf("remote: pulled index: %w", err)
	}
	if ws != "" {
		if _, err := db.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES ('workspace', ?)`, ws); err != nil {
			return fmt.Errorf("remote: pulled index: %w", err)
		}
	}
	return db.Close()
}
