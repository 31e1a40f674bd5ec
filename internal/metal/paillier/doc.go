// Package paillier is the Paillier cryptosystem (Paillier, Eurocrypt 1999) with g = N+1,
// as Metal-SHARE's anonyms need it (paper Section 6.1, Figure 9): key generation, encryption,
// decryption, and the homomorphic addition of a plaintext that also refreshes the
// ciphertext's randomness (the anonym rerandomization).
//
// Why it is written here: the brief names github.com/taurusgroup/multi-party-sig's paillier,
// and the module proxy this project builds from answers 403 for it and for every other
// maintained Go Paillier module tried (docs/design-metal.md, "§6 — Metal-SHARE"). The scheme
// is composed only of math/big modular arithmetic and crypto/rand.Prime, checked by tests
// against its defining equations and the homomorphism, and pinned by vectors. Limits:
// math/big is not constant-time, so a server's decryption leaks timing of its own key to a
// co-located observer (the paper's threat model has semi-honest servers and no such
// observer); the key is 2048 bits (112-bit security).
//
// Layering: a primitive. It imports only the standard library; no veil package.
package paillier
