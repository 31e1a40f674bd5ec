// Package dupless is the DupLESS client: it stores files on an untrusted storage service
// (any storage.Backend) so that the service sees only ciphertext and encrypted names, while
// identical content from different users still deduplicates.
//
// Terms:
//   - master key: the user's random 256-bit secret, kept in a key file sealed with a
//     passphrase (keyfile.go). Every other user key is derived from it with HKDF.
//   - encrypted name: a directory or file name encrypted with AES-SIV under the name key,
//     base64url-encoded; equal names encrypt equally, so listing and exact search work on
//     the storage service (EncPath, names.go).
//   - chunk: a piece of a file cut by content-defined chunking (a small file is one chunk),
//     compressed with zstd when that pays, then encrypted with MLE (HCE2) under a key the key
//     server derives from the chunk's hash.
//   - key record: the small object "<encname>.key" holding a file's metadata and, for every
//     chunk, its MLE key, hash and ciphertext hash, sealed under the user's record key with
//     the encrypted path as associated data (record.go, docs/formats/key-record.md).
//   - chunk objects: ".veil/chunks/<hh>/<hash>", named by the SHA-256 of their ciphertext,
//     immutable, so the key record is a put's single commit point and an edited file
//     re-uploads only the chunks that changed (the paper's "<name>.ctxt" is replaced by
//     this; see docs/design.md).
//   - namespace ownership and locks: ".veil/keycheck" and ".veil/locks/" (lock.go).
//   - snapshots and versions: every tree root (".veil/roots/<n>", root.go) is a snapshot
//     until Forget drops it; a record a command replaces or deletes is kept as
//     ".veil/versions/<hh>/<sha256>" (history.go), so Log, PinVersion/PinTime/PinSnapshot
//     and Prune see every retained snapshot (snapshots.go, log.go, forget.go, prunehist.go).
//
// Key derivation goes through an mle.KeyDeriver (the key server client in production);
// when it fails the file is stored under a random key (fail safe: readable, not deduped).
//
// dupless is a client: it may import mle, storage and ksclient (through mle.KeyDeriver),
// never the servers (keyserver, store) or cmd.
package dupless
