// Package kswire holds the key server's wire and file formats, shared by the server
// (internal/keyserver) and its client (internal/ksclient): evaluation requests and
// responses, UDP session grants and datagrams, and the client credential file. Every
// format is specified byte by byte in docs/formats/ks-wire.md and docs/formats/ks-credential.md
// and pinned by testdata/ks/.
//
// Parsers take untrusted bytes: they check every length before reading, return errors
// wrapping ErrMalformed, and never panic (fuzzed).
//
// This package sits on the formats layer: it imports the standard library and
// internal/oprf only; it must not import keyserver, ksclient, storage or cmd.
package kswire
