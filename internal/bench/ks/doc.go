// Package ksbench is the key server load generator behind 'veil bench ks'. It
// pre-computes valid blinded requests so its own CPU goes to sending, drives a key server
// over HTTPS (keep-alive) or UDP sessions, closed-loop (C workers) or open-loop at a fixed
// UDP rate, and reports requests/s, evaluations/s, p50/p99 latency, errors and drops. With
// Static it requests /healthz instead: the paper's "static web page" baseline.
//
// It is a client-side tool: it imports oprf and kswire; it must not import keyserver,
// ksclient internals, storage or cmd, and never prints (results are returned).
package ksbench
