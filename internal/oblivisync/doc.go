// Package oblivisync is ObliviSync's engine: a write-only ORAM that hides which frontend
// files change, how much and when, behind a backend directory (e.g. inside a Dropbox
// folder) of N equal-size encrypted files.
//
// Terms:
//   - backend file: one of N files of exactly B bytes ("b000000".."b<N-1>"), each the
//     AEAD encryption (fresh random nonce) of a PAIR of blocks ("sides") of S bytes.
//   - superblock: the file "super", also B bytes, rewritten every epoch; it holds the epoch
//     number, the epoch each backend file was last written at (rollback check) and the
//     page table locating the metadata pages.
//   - fragment: a piece of an object (a frontend file's content, or a metadata page) of at
//     most C = S-16 bytes stored in a side behind a 16-byte header. Every fragment but a
//     file's last is a full block.
//   - page: 64 consecutive inode records (attributes, parent, name, fragment locations);
//     pages are objects too, so metadata scales with the backend, not with one block.
//   - epoch: one sync. The writer picks k backend files uniformly at random with
//     crypto/rand, keeps their live fragments in place, packs pending fragments into the
//     free space (best fit), and rewrites exactly those k files plus the superblock, each
//     replaced atomically — the same writes whether the user was idle or busy.
//   - committed: the version of an inode the backend's superblock shows. An inode is
//     committed only once all its fragments are written (shadow copy), so read-only
//     clients only see fully synced versions.
//   - journal: the writer's local, encrypted, append-only log of pending changes plus a
//     checkpoint; it bounds memory (pending data lives on disk) and survives a crash.
//
// The FUSE filesystem lives in the subpackage fusefs. This package must not import cmd,
// FUSE, or any other veil subsystem (dupless, storage, keyserver): it shares only vetted
// primitives (x/crypto argon2id and XChaCha20-Poly1305, stdlib HKDF) with them.
package oblivisync
