// Package elgamal is the rerandomizable encryption of Metal's DataORAM (paper Sections 5.3
// and 7.2): ElGamal over the ristretto255 group (github.com/bwesterb/go-ristretto), each
// 16-byte chunk of a data block encoded as a group element with Lizard, under a public key
// whose secret is split additively between the two servers.
//
// Terms:
//
//	KeyShare    a server's secret x_i (a scalar) and its public X_i = x_i*G
//	PublicKey   P = X_1 + X_2; nobody holds x_1 + x_2
//	Ciphertext  (R, C) = (r*G, M + r*P) for a chunk encoded as the point M; 64 bytes
//	Rerandomize (R + s*G, C + s*P): the same plaintext, unlinkable without the key
//	Partial     D_i = x_i*R, a server's share of a decryption; M = C - D_1 - D_2
//
// Decoding a point that is not a Lizard encoding fails, so a ciphertext altered by a server
// decrypts to an error with high probability rather than to chosen data (a partial check:
// the full integrity design is docs/design-metal.md's).
//
// Randomness is injected (io.Reader). Layering: a primitives package; standard library and
// go-ristretto only; it must not import other veil packages.
package elgamal
