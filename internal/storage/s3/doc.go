// Package s3 is a storage.Backend on an S3 bucket (any S3-compatible server) through
// minio-go.
//
// Layout: the object dir/name is the key <prefix>dir/name; a directory d is the marker
// object <prefix>d/ (zero bytes), written for every directory Create or Put makes, so empty
// directories exist and a directory outlives its last file. Directories implied by keys
// without a marker (written by another tool) are honoured too. A file move is a server-side
// copy then a delete; a directory move copies everything, then deletes the originals, so an
// interrupted move leaves every object readable under one of the two names.
//
// PutNew (storage.Creator) is one PUT with If-None-Match: *, atomic on a server that
// honours it; the first PutNew of a Backend learns whether the server does (create.go),
// and on one that does not, every PutNew stores nothing and says so (ErrNoConditions).
//
// It imports storage, minio-go and the standard library only.
package s3
