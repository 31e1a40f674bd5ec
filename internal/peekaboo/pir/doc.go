// Package pir is the replicated hashed-key table behind Peekaboo's private-query mode
// (docs/design-peekaboo.md "Private queries", docs/formats/peekaboo-pir.md): two-server
// XOR PIR with distributed point functions (internal/peekaboo/dpf).
//
// Terms: the table has 2^Bits buckets of Slots fixed-size slots and a 16-byte digest. A
// pair (key, id) occupies one slot in bucket Derive(key).Bucket: an 8-byte tag and the
// pair id under a deterministic authenticated encryption (SIV: HMAC-SHA256 then AES-CTR)
// with keys derived from the key, so only someone who knows the key can find or read it.
// Slots in a bucket are sorted, empty slots (zeros) last; the digest is SHA-256 over the
// bucket's index and slots. Both servers hold the same table; each answers a DPF key with
// the XOR of the buckets its share selects; the client XORs the two answers and checks
// the digest.
//
// It imports internal/peekaboo/dpf and bbolt (the persistent replica); never wire, the
// servers, the client or cmd.
package pir
