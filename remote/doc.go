// Package remote keeps a store's sessions on object storage (an
// S3-compatible bucket, or a directory), so a session captured on one
// machine can be pulled and rewound on another. The capture hot path never
// touches it: sync runs after the fact and uploads what is new.
//
// # Remote layout (under the backend's prefix)
//
//	packs/XX/HEX.pack                  immutable packs of stored blobs (pack.go)
//	sessions/ID/index-SUM.db.zst       a consistent snapshot of a session's index
//	                                   (VACUUM INTO, zstd); SUM = BLAKE3 of the db
//	sessions/ID/HEAD                   JSON naming the session's current index
//	                                   and every pack its blobs are in
//
// # Guarantees
//
// A sync writes packs, then the index, then HEAD, each durable before the
// next starts: nothing remote names an object that is not there. HEAD is
// replaced only with if-match on the ETag this store last saw (create-only
// the first time); when another writer moved it, the session is uploaded
// under a new id (a fork) instead of overwriting theirs. Packs and indexes
// are content-addressed, so a retried or repeated upload writes the same
// bytes. A sync killed between packs and HEAD leaves HEAD, and so every
// pull, at the previous state.
//
// Pull reads HEAD, the index and the packs' trailers, fetches only the
// blobs the local store lacks, and records each after decoding and hashing
// it (cas.Disk.PutStored): a truncated or altered body is an error, never
// an absent file. The index is installed last, so a local index never
// names a blob the store does not have.
//
// # For embedders
//
// Package remote is a peer of package controller, not something reached
// through it: controller drives one workspace's session, remote moves a
// whole store's sessions to and from object storage. It imports
// controller (a pull into a workspace opens the pulled session there
// through controller, as any front-end does), so controller cannot import
// it, and a program that never syncs links no object-storage client. An
// embedder that syncs imports both:
//
//	r, err := remote.OpenStore(ctx, store) // $CKPT_REMOTE, else STORE/config.json; ErrNoRemote if neither
//	defer r.Close()
//	res, err := r.Sync(ctx, nil, false) // every session of the store; ErrBusy if another sync runs
//	pr, err := r.Pull(ctx, remote.PullOptions{Session: id, Workspace: dir})
//
// OpenConfig opens a Config (LoadConfig's) and Open any backend.Backend; the backends
// ckpt ships are remote/backend/dir and remote/backend/s3, and
// remote/backend/backendtest is the conformance suite a new one must pass.
// The CLI uses this package exactly so (cmd/ckpt/remote_cmds.go). The
// import tests in package controller keep front-ends off the backends
// (TestFrontEndsSyncThroughRemote) and everything at or below controller
// off remote (TestRemoteIsAbove).
package remote
