// Package vserver is Peekaboo's V-server: the only server owners and clients talk to. It
// holds users, pair values, owners and ACLs, authenticates every request, strips the
// caller's identity from what it forwards, and relays sealed queries and publication
// chunks to the K-server over mutual TLS in shuffled batches (the mixer). It maps the pair
// ids the K-server returns to the values the client may see and pads replies to size
// classes. It keeps a replica of the K-server's private-query table and answers its half
// of a private query (its DPF key) while relaying the other half. It marks the pairs of
// a chunk until the K-server acknowledges it, and removes from both servers those whose
// chunk got no acknowledgement (settle.go). It never holds a key or a query in the clear
// (docs/design-peekaboo.md).
//
// It imports internal/peekaboo/{wire,dpf,pir,pki} and atomicfile; never the K-server, the client,
// or cmd.
package vserver
