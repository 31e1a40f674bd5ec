// Package oprf is the oblivious PRF behind DupLESS's server-aided key generation:
// K = F(Ks, H(M)), computed by a key server that sees only a blinded H(M).
//
// Terms:
//
//	Suite       one OPRF construction (ristretto255 VOPRF, or RSA blind signatures)
//	PrivateKey  the key server's secret Ks for one suite, with its KeyID
//	PublicKey   what clients pin: verifies every evaluation the server returns
//	KeyID       8 bytes naming a key: SHA-256("veil-ks-v1 keyid" || suite || public)[:8]
//	Blinded     a client's blinded batch: the elements sent, and the secret state to unblind
//
// Message flow (one batch of n digests, one round trip):
//
//	client: b = pub.Blind(rnd, digests)      -> b.Elements (n elements)
//	server: evals, proof = priv.Evaluate(b.Elements)
//	client: keys = pub.Finalize(b, evals, proof)   (verifies, unblinds, derives 32-byte keys)
//
// Suites:
//
//	ristretto255  RFC 9497 VOPRF, ristretto255-SHA512, verifiable mode; one batched DLEQ
//	              proof covers all n evaluations. Default. The client blinds
//	              additively (H(x) + r*G, unblinded as eval - r*pk once the proof
//	              verifies): RFC 9497's outputs with fixed-base multiplications only
//	              (docs/security.md). Composed in voprf.go over
//	              curve25519-voi's ristretto255 (group.go; variable-time multi-scalar
//	              multiplication only for the proof's public composites) and circl's
//	              expand_message_xmd; output identical to circl/oprf
//	              (tested both ways) and to RFC 9497's vectors (testdata/oprf).
//	rsa           RFC 9474 RSABSSA-SHA384-PSSZERO-Deterministic (circl/blindsign/blindrsa),
//	              the paper's construction; the client verifies each unblinded signature.
//	              PSSZERO (salt length 0) is the only RFC 9474 variant whose signature is a
//	              function of the message alone, which key derivation requires.
//
// Output key: K = HMAC-SHA256(key = "veil-ks-v1 key", suite || KeyID || output), where
// output is the 64-byte RFC 9497 Finalize output or the RSA signature (docs/formats/ks-wire.md).
//
// Randomness is injected (an io.Reader) so tests and vectors are deterministic. This package
// sits on the protocols layer: it imports only the standard library, circl and
// curve25519-voi; it must not import keyserver, ksclient, storage, services or cmd.
package oprf
