// Package twopc is Metal's secure two-party computation engine (paper Section 3): Yao's
// garbled circuits with free-XOR and half-gates, fixed-key AES (crypto/aes, AES-NI) as the
// garbling hash, IKNP OT extension over 128 Simplest-OT base OTs (circl ot/simot on
// ristretto255), semi-honest security, reactive state carried between calls as XOR shares.
//
// Terms:
//
//	Session   one party's end of a long-lived computation over one ordered byte stream;
//	          base OTs once at setup, then any number of Runs
//	Garbler   party 1 (Metal's Server 1): holds Delta, garbles, sends tables
//	Evaluator party 2 (Metal's Server 2): gets its input labels by OT, evaluates
//	Run       one circuit (internal/metal/circuit) on both parties' inputs; outputs go to
//	          both, one party, or to both as XOR shares (circuit.Kind)
//	Delta     the garbler's free-XOR offset (colour bit 1), also the IKNP correlation: the
//	          correlated OTs of extension are the evaluator's input labels directly
//
// Reactive state: a Shared output is the pair (permute bit of the zero-label, colour bit of
// the active label); each half is already in its party's view, so the sharing leaks
// nothing, and the next Run takes both halves back as inputs (circuit SharedInput). The
// caller stores its shares (crash-safe, on its own disk); the engine keeps no state
// besides the OT-extension PRGs, Delta and the tweak counter, which live and die with the
// Session (a new Session after a restart; shares survive it).
//
// The transport must already be authenticated and private (mutual TLS between the
// servers); this package adds no encryption. Wire format: docs/formats/metal-2pc.md.
//
// Layering: a protocols package. It imports the standard library, circl and
// internal/metal/circuit; it must not import storage, services, other systems or cmd.
package twopc
