// Package pki makes and loads the private certificate authorities of veil's servers (the
// store's, the key server's, Peekaboo's and Metal's): a self-signed P-256 CA, server
// certificates for a list of hosts, client certificates for a name. One convention for all:
// PKCS#8 keys in "PRIVATE KEY" PEM blocks (SEC 1 "EC PRIVATE KEY" still loads, as older
// store directories have it), 127-bit random serials, certificates written 0644 and keys
// 0600 atomically, files named ca.crt, ca.key, server.crt, server.key. Every error is
// returned.
//
// ReissueServer replaces a server's certificate with one from the same CA for the same key
// (the servers' `cert` commands); ServerCert is how every server loads its certificate:
// refused when expired, read again at the first handshake after it was replaced.
//
// It imports only the standard library and internal/atomicfile; it must not import any
// server, client or cmd package.
package pki
