// Package remote is the storage.Backend that talks to veil's storage service ('veil store
// serve') over its HTTP API (docs/formats/store-api.md): one user's namespace, HTTPS with
// the service's CA pinned from the user's credential.
//
// It imports storage, storewire (the wire vocabulary) and the standard library only; never
// the server itself.
package remote
