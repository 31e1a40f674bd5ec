// Package circuit builds the boolean circuits that Metal's two servers evaluate inside
// secure two-party computation (internal/metal/twopc), and evaluates them in the clear
// so every circuit can be tested against plain computation.
//
// Terms:
//
//	Wire      one bit of the computation; wires [0, In1) are party 1's inputs, [In1, In1+In2)
//	          party 2's, the rest are gate outputs in topological order
//	Gate      XOR, AND or INV over wires; only AND costs anything under free-XOR garbling
//	Output    a wire and who learns it: Public (both), Party1, Party2, or Shared (XOR
//	          shares, one per party: the form Metal keeps its reactive state and client
//	          answers in, paper Section 3)
//	Builder   the Go API that writes circuits: bits and words (comparisons, adders, muxes,
//	          XOR-share reconstruction), Bristol Fashion sub-circuits (the vetted AES-128
//	          circuit, embedded), and AES-EAX verification/creation of one-block messages
//	          for Metal-AC capabilities (paper Section 4)
//
// The builder folds constants (x AND 0 = 0, x XOR 1 = NOT x, ...), so circuits over public
// constants cost only the gates that depend on secret wires. Digest names a circuit so the
// two parties can check that they run the same one.
//
// Layering: a formats/primitives package. It imports only the standard library; it must not
// import twopc, any other veil package, services or cmd.
package circuit
