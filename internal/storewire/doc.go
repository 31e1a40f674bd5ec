// Package storewire holds the wire vocabulary of veil's storage service (docs/formats/store-api.md)
// shared by the server (internal/storeserver) and its client (internal/storage/remote): the error
// codes and their mapping to storage's sentinel errors, the JSON bodies, header names, and
// the credential file a user loads to connect (docs/formats/store-credential.md).
//
// It imports storage and the standard library only; never the server, bbolt or a backend.
package storewire
