// Package failover keeps the rotation over the endpoints of one service that the clients
// with several endpoints share (the key server's replicas in ksclient, the storage nodes in
// storage/remote): each request starts at the next endpoint in turn, and an endpoint that
// failed is tried last for a while. Which errors move a request on is the caller's choice.
//
// It is a foundation: it imports nothing from veil, so every package may import it.
package failover
