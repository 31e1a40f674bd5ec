// Package mle implements message-locked encryption (MLE): the four schemes of Bellare,
// Keelveedhi and Ristenpart (Eurocrypt 2013) as the DupLESS slides define them.
//
// An MLE scheme is five algorithms: Param, KeyGen, Enc, Dec and TagGen. KeyGen derives the
// key from the message itself, so equal messages encrypt to ciphertexts with equal tags and a
// storage service can deduplicate them without seeing plaintext. Here:
//
//	E, D  AES-256-CTR with a zero IV (deterministic; each key encrypts one message only)
//	H     the suite's hash: SHA-256 or BLAKE3-256
//
//	CE    K = H(M)  C = E(K,M)                    T = H(C)
//	HCE1  K = H(M)  C = E(K,M) || H(K)            T = H(K)   (not tag consistent)
//	HCE2  as HCE1, with guarded decryption        T = H(K)   (tag consistent)
//	RCE   L random; C = E(L,M) || L^K || H(K)     T = H(K)   (single pass, guarded)
//
// KeyGen is pluggable through KeyDeriver (K = Derive(H(M))): LocalKeys is plain MLE,
// and the key server client plugs in server-aided derivation without any change here.
// Guarded decryption re-derives the key check from the recovered message through a Guard.
//
// Byte formats are specified in docs/formats/mle.md and pinned by testdata/mle/.
//
// This package sits on the primitives layer: it imports only the standard library and
// hash implementations; it must not import storage, clients, services or cmd.
package mle
