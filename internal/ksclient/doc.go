// Package ksclient derives message keys through a veil key server: for a batch of message
// digests it blinds them, sends one request (HTTPS with keep-alive, or a datagram of a UDP
// session), verifies the answer against the key server's pinned public key, unblinds and
// derives one 256-bit key per digest. It implements mle.KeyDeriver. It is the one place
// key requests are shaped: concurrent callers' derivations are coalesced into shared
// requests (at most MaxInflight at once) and split to what one request may carry
// (coalesce.go).
//
// Failure behaviour (the caller decides what to do; DupLESS fails safe to a random key):
//
//	ErrKSUnavailable  no answer after Options.Retries attempts of Options.Timeout each (t_R)
//	ErrRateLimited    the key server refused: budget spent; or, as a *DelayedError, a key
//	                  server in a delay mode kept its answer past the client's patience
//	ErrBadResponse    an answer that does not parse or verify (logged at warning level)
//	ErrUnauthorized   the credential is unknown or revoked
//	ErrUnexpected     an HTTP status no key server sends (404: nothing serves that URL)
//
// Client.Check tries a credential with one derivation, and CredentialProblem tells a
// credential that does not go with the key server (403, a refused TLS handshake, another
// server's certificate or key) from a key server that is down or rate-limiting ('veil
// init' refuses the first and warns of the second; check.go).
//
// This package is a client: it imports oprf, kswire, mle and libraries; it must not import
// keyserver, dupless, storage or cmd, and never prints (logs go to Options.Logger).
package ksclient
