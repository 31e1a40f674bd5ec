// Package wire holds every Peekaboo message and record format (docs/formats/peekaboo-wire.md,
// peekaboo-state.md): the HPKE suite (ML-KEM-768+X25519, HKDF-SHA256, AES-256-GCM), sealing
// and opening of queries and publication chunks, match records under the one-time key, and
// reply padding to size classes. Parsers take untrusted bytes and return ErrMalformed-wrapped
// one-line errors; they are fuzzed.
//
// Terms: a pair is (key, value) published by an owner under a random 16-byte pair id; the
// K-server holds id -> key, the V-server id -> value. A relay item is what the V-server
// forwards to the K-server, stripped of every identity.
//
// It must not import any other veil package: servers and clients import it.
package wire
