// Package keyserver is DupLESS's key server (KS): it holds the OPRF secret key(s) and
// answers blinded key-derivation requests from authenticated clients, rate-limited per
// client, over HTTPS and over UDP sessions.
//
// Terms:
//
//	dir         the KS directory: ks.json (suite, key ring, addresses), keys/<id>.key,
//	            the private CA (ca.crt, ca.key), the server certificate, clients.json (the
//	            client registry) and ratelimit.db (bbolt)
//	client      a named holder of a client certificate issued by the KS CA (mutual TLS);
//	            rate limits are per client, across all its connections and sessions
//	key ring    every key the KS ever used; one is current (new credentials use it), the
//	            others keep answering so data keyed under them stays derivable
//	session     a UDP session opened over HTTPS: id, MAC key, expiry (OPRFv2)
//	evaluation  one blinded input evaluated; rate limits count evaluations, not requests
//
// Endpoints (docs/formats/ks-wire.md): POST /v1/evaluate, POST /v1/session, GET /healthz,
// GET /metrics on the HTTPS listener; datagrams on the UDP listener.
//
// This package is a service: it imports oprf, kswire and libraries; it must not import
// ksclient, dupless, storage or cmd, and it never prints (logs go to the injected slog.Logger).
package keyserver
