// Package sealedkey is veil's passphrase-sealed key file: a secret encrypted with
// XChaCha20-Poly1305 under argon2id(passphrase, salt), with the KDF costs in the clear and
// authenticated. DupLESS's user key file and ObliviSync's osync.key are two Formats of this
// one implementation (docs/formats/key-record.md "Key file", docs/formats/oblivisync.md):
//
//	magic | version | argon2id time u32 | memory KiB u32 | threads u8 | salt [16] |
//	extra [ExtraLen] | nonce [24] | AEAD(secret) (+16)
//
// The associated data is the header up to and including extra, plus the nonce when
// Format.NonceInAD. The KDF costs are bounded per Format before any work is done, since a
// key file may come from an untrusted place.
//
// It imports only the standard library and golang.org/x/crypto; it must not import any
// other veil package.
package sealedkey
