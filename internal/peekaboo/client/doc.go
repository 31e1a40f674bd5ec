// Package client is the Peekaboo owner and client library: publish (in chunks, each sealed
// to the K-server with one HPKE context), unpublish, list one's own pairs (keys recovered
// from owner blobs), and search (a sealed query with a one-time key; match records checked,
// advanced keys opened). It talks only to the V-server, with the user's credential
// (docs/formats/peekaboo-credential.md).
//
// It imports internal/peekaboo/{wire,pki}; never a server or cmd.
package client
