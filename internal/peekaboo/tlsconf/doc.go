// Package tlsconf builds the Peekaboo servers' and clients' tls.Configs (TLS 1.3 only)
// from PEM made by internal/pki: the V-server's mutual-TLS relay to the K-server and the
// clients' pinned-CA connections to the V-server. It imports no veil package.
package tlsconf
