// Package local is the embedded default storage.Backend: a directory tree on the local
// filesystem, one file per object, directories as directories.
//
// Writes are atomic: Put streams into a temporary file inside the hidden folder
// TempDirName at the backend's root, fsyncs it and renames it into place, then fsyncs the
// parent directory, so a reader or a crash sees the old object or the new one, never a
// prefix. A Put holds an flock on its temporary file until the rename, so New (which
// removes the temporary files of crashed Puts) leaves alone those of Puts in flight in
// another process using the same store. TempDirName is reserved: it is never listed or
// searched and cannot be used as a name in the root directory.
//
// It imports storage, atomicfile and the standard library (plus x/sys for renameat2) only;
// it never imports veil's clients, crypto or services.
package local
