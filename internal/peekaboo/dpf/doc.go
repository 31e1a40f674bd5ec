// Package dpf is a two-party distributed point function: the tree construction of Boyle,
// Gilboa and Ishai, "Function Secret Sharing: Improvements and Extensions" (CCS 2016,
// Fig. 1), for the point function f(x) = 1 if x = alpha else 0 over the domain
// {0,1}^n with output in GF(2). Gen(alpha) makes two keys; each key alone is
// pseudorandom and says nothing about alpha; Eval(k0, x) XOR Eval(k1, x) = f(x).
// EvalFull evaluates a key on the whole domain (what a PIR server does).
//
// The length-doubling PRG is fixed-key AES-128 (crypto/aes) in Matyas-Meyer-Oseas form,
// G(s) = (AES_kL(s) XOR s, AES_kR(s) XOR s) with two public keys; the control bits are the
// least significant bits of the two halves (docs/formats/peekaboo-dpf.md says why this and
// not AES-CTR keyed by the seed). With early termination a leaf holds 128 output bits
// (Convert(s) = AES_kC(s) XOR s, corrected by the final word), so a full-domain evaluation
// of 2^n points expands only 2^(n-6) tree nodes.
//
// Terms: a seed is 16 bytes; a correction word is a seed and two control bits per level;
// the party bit (0 or 1) is the root control bit.
//
// It is a primitive composition: it imports only the standard library, never another
// veil package.
package dpf
