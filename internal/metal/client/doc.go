// Package client is Metal's client (paper Section 3): it XOR-shares each request between
// the two servers (internal/metal/access builds the parts), sends each server its part over
// TLS under one random request id, and combines the replies. Neither server is ever sent
// the file id, the operation or the capability in the clear.
//
// Layering: a client. It imports internal/metal/access and what it builds on; it must not
// import the servers, cmd or other systems.
package client
