// Package backoff runs an operation again, after fixed pauses, while it fails in a way
// the caller says may pass: the one retry loop the DupLESS client's chunk uploads and the
// storage service client share.
//
// It is a foundation: it imports nothing from veil, so every package may import it.
package backoff
