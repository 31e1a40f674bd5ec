// Package storage defines the storage service (SS) that veil's clients write to: the
// Dropbox-like API of the DupLESS paper (put, get, list, delete, search, create, move, plus
// stat), its error classes, and the conformance suite every backend must pass.
//
// Terms:
//   - dir: a slash-separated path of directory names ("" is the root, "a/b" a subdirectory);
//     never starts or ends with '/', no "." or ".." components, no empty components, no NUL.
//   - name: one path component (a file or directory name within dir), same rules.
//   - object: the bytes stored under dir/name.
//
// Backends live in subpackages (local, s3, remote). This package must not import any of
// veil's client or crypto packages (mle, dupless, ksclient): storage never sees keys.
package storage
