// Package fusefs serves an ObliviSync client (read-write Writer or read-only Reader) as a
// FUSE filesystem through go-fuse's raw API: FUSE node ids are ObliviSync inode numbers
// (stable, never reused), so no translation table is needed.
//
// It must not import cmd or any other veil subsystem; it only adapts oblivisync.FS to
// FUSE and runs the mount lifecycle (epoch loop, drain on unmount).
package fusefs
