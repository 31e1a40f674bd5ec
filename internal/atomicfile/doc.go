// Package atomicfile writes small files so that a crash at any point leaves either the
// old or the new content: a temporary file in the same directory, fsync, rename, and an
// fsync of the directory. It is a leaf utility: it imports only the standard library.
package atomicfile
