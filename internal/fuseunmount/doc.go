// Package fuseunmount ends a go-fuse mount when its command stops (Ctrl-C, SIGTERM): an
// unmount, and a lazy one (fusermount3 -u -z) when files in the mount are still open. The
// two FUSE mounts, ObliviSync's and DupLESS's read-only view, share it.
//
// It is a foundation: it imports nothing from veil, so every package may import it.
package fuseunmount
