// Package ac is Metal-AC (paper Section 4): capabilities are EAX authenticated encryptions
// of an access description under a capability key that exists only as XOR shares on the
// two servers; the servers create (CreateAccount) and check (every access) capabilities
// inside secure two-party computation (internal/metal/twopc), so neither server sees a
// capability, a description or the key, and the user cannot forge one.
//
// Terms:
//
//	Description  16 bytes: version, permissions (read, write, share), a range of file ids
//	             (first, count); one EAX block (docs/formats/metal-capability.md)
//	Capability   48 bytes: nonce || EAX ciphertext || EAX tag, under key K1 XOR K2
//	Party        one server's side: its twopc Session, its key share, and its share of the
//	             next free file id (reactive state, re-shared by every CreateAccount)
//	Request      what a client sends one server: XOR shares of capability, file id and
//	             wanted operation, fresh for every request
//
// Circuits: CreateAccount is 6 AES-128 calls + a 64-bit adder (38,461 AND gates); Check is
// 6 AES calls + range and permission tests (38,762 AND gates). Check's result is itself
// XOR-shared: the servers never learn whether a request was allowed; the ORAM access that
// follows in the same computation (next step of issue 12) consumes it inside 2PC.
//
// Layering: a protocols package. It imports internal/metal/circuit and internal/metal/twopc
// and the standard library; it must not import storage, services, other systems or cmd.
package ac
