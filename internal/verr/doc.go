// Package verr holds the error values every layer of veil shares, so that a caller can ask
// one question of any error, whichever system or layer produced it:
// errors.Is(err, verr.ErrIntegrity) says "stored or served data failed verification".
//
// Each package still declares its own sentinel (mle.ErrIntegrity, storage.ErrIntegrity,
// dupless.ErrIntegrity, oblivisync.ErrIntegrity, the Peekaboo client's), made with
// NewIntegrity: its own text and identity, and ErrIntegrity beneath it.
//
// It is a foundation: it imports nothing from veil, so every package may import it.
package verr
