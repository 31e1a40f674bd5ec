// Package kserver is Peekaboo's K-server: it holds pair ids and keys (and the pseudonyms
// allowed to match them), its HPKE private key and its TLS CA, and answers relay batches
// from the V-server over mutual TLS (POST /v1/relay): it opens sealed queries (detecting
// alteration by AEAD and replay by nonce and time), looks them up in the index and returns
// pair ids with match records; it opens publication chunks and stores their keys, and keeps
// the private-query table built from them (internal/peekaboo/pir), answering sealed DPF
// keys with its share sealed to the client. It never
// receives an owner, a client or a value (docs/design-peekaboo.md).
//
// It imports internal/peekaboo/{wire,index,dpf,pir,pki} and atomicfile; never the V-server, the
// client, or cmd.
package kserver
