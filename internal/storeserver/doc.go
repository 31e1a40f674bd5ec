// Package storeserver is veil's deduplicating storage service: per-user namespaces implementing
// the storage API over HTTP (docs/formats/store-api.md), with server-side, write-once,
// content-addressed deduplication across users.
//
// Terms:
//   - blob: one distinct content, named by the SHA-256 the server computed over the bytes it
//     received (never a hash sent by a client), stored once and never modified.
//   - entry: a user's name (dir + name) pointing at a blob, or a directory.
//   - reference count: how many entries point at a blob; a blob at zero is garbage that gc
//     reclaims. Uploads take a shared lock around "make the blob durable + reference it",
//     gc an exclusive one, so gc never deletes content an upload is about to reference.
//
// Metadata (meta.go) is in bbolt (meta.db in the data directory, one process) or in
// PostgreSQL (meta-location.json names it; any number of nodes).
//
// Layout of a data directory: meta.db (bbolt: users, namespaces, blob records; formats in
// docs/formats/store-records.md) or meta-location.json, blobs/xx/<hex> (content, when blobs are local), tmp/
// (uploads in flight), tls/ (CA and server certificate from internal/pki), admin.cred.
//
// It imports storage, storage backends (for blobs in S3), storewire, bbolt, pgx and prometheus;
// it must not import veil's clients or crypto (dupless, mle, ksclient) or cmd.
package storeserver
