package storeserver

import (
	"context"
)

// The service's metadata (users, namespaces, accounting, blob records) lives behind two
// interfaces: metaStore (a database: transactions, gc coordination, collection) and
// metaTx (the reads and writes one transaction may do). The namespace logic (ns.go,
// move.go, put.go, accounting.go), fsck, stats and user management are written once
// against them; two databases implement them:
//   - bbolt (meta_bolt.go), the embedded default for one machine: meta.db in the data
//     directory, one process at a time, gc coordinated by an in-process lock;
//   - PostgreSQL (meta_pg*.go), shared by any number of 'veil store serve' nodes, gc
//     coordinated through blob rows (pins with a lease, a deleting mark).
//
// docs/design-store.md says what each relies on.

// metaStore is the metadata database of a store.
type metaStore interface {
	// update runs fn in a write transaction on user's behalf ("" for none), possibly
	// grouped with concurrent callers into one commit. fn must change nothing outside
	// the transaction: it may run more than once (alone, if another member of its group
	// failed, or again after a serialization conflict).
	update(ctx context.Context, user string, fn func(metaTx) error) error
	// updateNames is update for an fn that looks up the given names (dir, name) of user
	// first: a database may read them all at once, before fn runs.
	updateNames(ctx context.Context, user string, names [][2]string, fn func(metaTx) error) error
	// view runs fn in a read-only transaction.
	view(ctx context.Context, fn func(metaTx) error) error
	// hold keeps gc from removing blob h (size bytes, kept in the blob store) until the
	// pin's release is called: an upload holds it from before it makes the blob durable
	// until its reference (incref with the pin's generation) is committed.
	hold(ctx context.Context, h [32]byte, size int64) (blobPin, error)
	// discard ends pin, the hold on h of an upload whose transaction did not reference
	// it, and removes h from blobs as collect would if no record references it and no
	// other upload holds it (pin is released either way): a refused upload leaves
	// nothing for gc. Holds of h made meanwhile wait until the removal is done.
	discard(ctx context.Context, h [32]byte, pin blobPin, blobs blobStore) error
	// reserve records a quota reservation of bytes for user where every node sees it
	// (PostgreSQL; storage.ErrQuota when the user's quota cannot take it with the others
	// recorded), returning its id; on bbolt, where one process holds every reservation in
	// memory (quota.go), it records nothing and returns 0.
	reserve(ctx context.Context, user string, bytes int64) (int64, error)
	// unreserve drops reservation id of user that no transaction charged.
	unreserve(user string, id int64)
	// readHold keeps gc from removing blobs between a lookup and the open of the content.
	readHold() (release func())
	// collect removes unreferenced blob records and their content, and content without a
	// record (orphans), from blobs.
	collect(ctx context.Context, blobs blobStore) (GCReport, error)
	// shared reports whether other processes change the metadata too (cached users must
	// be re-read on a miss).
	shared() bool
	// ping checks that the database answers (readiness; bbolt: that it is open).
	ping(ctx context.Context) error
	close() error
}

// blobPin is an upload's hold on a blob (metaStore.hold).
type blobPin struct {
	// gen identifies the blob record the pin is on (PostgreSQL: veil_blobs.gen; on
	// bbolt, where a hold is a lock and a record outlives it, the key, which a record
	// made by the upload's reference takes).
	gen int64
	// key names the copy in the blob store the upload commits (blobID.key): the
	// generation of a row recorded with schema version 3 or later, else 0.
	key int64
	// release drops the pin (once), after the transaction that references the blob.
	release func()
}

// metaTx is one transaction. Methods taking a user operate on that user's namespace and
// fail with storage.ErrPermission when it does not exist. Directory names are full
// paths ("" is the root).
type metaTx interface {
	// entry returns dir/name's entry.
	entry(user, dir, name string) (entry, bool, error)
	putEntry(user, dir, name string, e entry) error
	deleteEntry(user, dir, name string) error
	// children calls fn for the entries directly in dir, in name (byte) order.
	children(user, dir string, fn func(name string, e entry) error) error
	// below calls fn for every entry in dir or any directory under it (the whole
	// namespace for dir ""), whose name is name (any name for ""), in key order
	// (dir, NUL, name).
	below(user, dir, name string, fn func(dir, name string, e entry) error) error
	// moveBelow renames everything below directory src (not src itself) to below dst.
	moveBelow(user, src, dst string) error

	// dirCount is the number of entries directly in dir.
	dirCount(user, dir string) (int64, error)
	setDirCount(user, dir string, n int64) error
	// moveDirCounts renames the counts of src and every directory under it to dst.
	moveDirCounts(user, src, dst string) error
	// dirCounts calls fn for every counted directory (fsck).
	dirCounts(user string, fn func(dir string, n int64) error) error
	// account returns the user's record and metadata bytes.
	account(user string) (userRec, int64, bool, error)
	setUsed(user string, u userRec) error
	// setQuota changes the user's quota (0: none); storage.ErrNotFound if there is no
	// such user.
	setQuota(user string, quota int64) error
	setMeta(user string, meta int64) error

	// blob returns h's record and, for inline content, the content.
	blob(h [32]byte) (blobRec, []byte, bool, error)
	// incref adds a reference to h, recording it first when new (inline is the content
	// when it is kept in the database, nil otherwise). Content in the blob store is
	// referenced by the upload that holds it: gen is its pin's generation, and the
	// transaction fails if the record is no longer the one pinned (gc collected it and
	// another upload recorded it anew; PostgreSQL), or a record it makes takes it as its
	// key (bbolt).
	incref(h [32]byte, size int64, inline []byte, gen int64) error
	// decref drops a reference; a blob at zero stays recorded until gc removes it.
	decref(h [32]byte) error
	// blobs calls fn for every blob record.
	blobs(fn func(h [32]byte, r blobRec) error) error

	// users calls fn for every user, in name order.
	users(fn func(name string, u userRec) error) error
	// createUser records a new user with an empty namespace (storage.ErrExists if taken).
	createUser(name string, u userRec) error
	// dropUser removes the user, their namespace and their accounting (references are
	// the caller's to drop first).
	dropUser(name string) error

	// reserved is the bytes of the reservations recorded for user (metaStore.reserve)
	// that are live and that this transaction does not charge (0 on bbolt).
	reserved(user string) (int64, error)
	// chargeReservation says this transaction charges user's recorded reservation id: it
	// deletes it with its writes.
	chargeReservation(user string, id int64)

	// onCommit runs fn once this transaction has committed, before the next transaction
	// of the store's group commit begins (never after an attempt that failed).
	onCommit(fn func())
}
