// Package invite defines the invitation file that joins a user to a veil deployment in
// one step: `veil serve adduser` writes it, `veil init --invite` reads it. It holds the
// storage location, the user's storage credential and the user's key server credential.
// Format: docs/formats/invite.md. It imports only the store's wire types.
package invite
