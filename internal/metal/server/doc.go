// Package server runs one of Metal's two servers (paper Section 3) on veil's server
// lifecycle (internal/server: Open -> Serve(ctx, Listeners) -> Close).
//
// Both serve HTTPS to clients: GET /v1/info (parameters and DataORAM public key shares),
// POST /v1/account (CreateAccount) and POST /v1/access (ReadFile/WriteFile), each request
// carrying a client-chosen request id and this server's part of the request
// (docs/formats/metal-server.md), plus /healthz and /metrics. Server 1 also dials Server
// 2's POST /v1/peer with a client certificate from Server 2's CA (mutual TLS) and upgrades
// it to the 2PC stream (internal/metal/twopc); over it, Server 1 asks about each request
// id, Server 2 answers at once whether the client's part for that id is there, and both run
// the call (internal/metal/access). Ids whose part is missing wait, and Server 1 asks about
// all of them in one query per poll (pairing.go, query.go), so requests sent to one server
// only cost the link the same however many there are. Calls run one at a time, in Server
// 1's order. What waiting requests hold is bounded per client address and per server
// (admit.go), Server 2 keeps a part only as long as Server 1 could still announce it
// (pending.go), and a server told to stop answers every request not yet in a call. The
// link's reads and writes have deadlines, and Server 1 answers at once while it cannot
// reach Server 2 (linkstate.go). Beside the link a liveness probe, which Server 2 echoes
// whatever its call is doing, cuts the link within the silence timeout when Server 2 goes
// silent, in a call too, so a silent Server 2 does not hold the queue for the call
// timeout (alive.go).
//
// Layering: a service. It imports internal/metal/access and the protocol packages below it,
// internal/server and internal/pki; it must not import clients, cmd or other systems.
package server
