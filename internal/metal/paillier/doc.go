// Package paillier is the Paillier cryptosystem (Paillier, Eurocrypt 1999) with g = N+1,
// as Metal-SHARE's anonyms need it (paper Section 6.1, Figure 9): key generation, encryption,
// decryption, and the homomorphic addition of a plaintext that also refreshes the
// ciphertext's randomness (the anonym rerandomization).
//
// Why it is written here: the brief names github.com/taurusgroup/multi-party-sig's paillier,
// and the module proxy this project builds from answers 403 for it and for every other
// maintained Go Paillier module tried (docs/design-metal.md, "§6 — Metal-SHARE"). This is a
// deviation from the rule that veil writes no primitive, kept as small as possible: the
// scheme is a composition of vetted arithmetic. Every operation on a secret (decryption by
// CRT over p^2 and q^2, the key's derived constants, and the encryption randomness and
// plaintext) is filippo.io/bigmod, the constant-time modular arithmetic of Go's crypto/rsa;
// math/big appears only in checks on public values (ciphertext range and unit test, the
// public key's size) and inside crypto/rand.Prime and crypto/rand.Int, which draw the
// primes (key generation, once per server, offline) and r. Tests check it against the
// textbook formula on math/big, against the defining equations and the homomorphism, and
// the share vectors pin its bytes. The key is 2048 bits (112-bit security).
//
// Layering: a primitive. It imports the standard library and filippo.io/bigmod; no veil
// package.
package paillier
