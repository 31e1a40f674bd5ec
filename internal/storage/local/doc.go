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
// Conditions (session 17): every commit (a Put's rename, a Delete, a Move, a batch) holds
// an flock on the file "lock" in TempDirName. MoveMatch (storage.MatchMover) holds it
// across its check of the source's SHA-256 and its rename, and PutBatch
// (storage.MatchBatcher, storage.LargeBatcher) across its check of every condition
// (Create, Absent, Match) and its renames, so no other writer of the directory, in this
// process or another, commits in between. Readers take no lock: a batch is atomic against
// writers, not readers or a crash (batch.go). The exclusion is only as good as the filesystem's flock: local filesystems and
// NFS mounted with server-side locking (Linux maps flock to NFSv4 byte-range locks, or NLM
// on NFSv3) exclude across processes and hosts; NFS mounted "nolock" or
// "local_lock=flock|all", and most FUSE and sync-client folders (sshfs, a Dropbox or
// Syncthing folder shared by two machines) exclude only within one host, and there two
// devices' commits are as unconditional as before. The lock serialises commits, not
// streaming: a Put writes its temporary file before it takes the lock. A commit waiting for
// the lock ends with its context, and one that cannot take it (.veil-tmp removed, the lock
// file a folder or not writable) fails naming .veil-tmp/lock, never as its object's state.
//
// It imports storage, atomicfile and the standard library (plus x/sys for renameat2) only;
// it never imports veil's clients, crypto or services.
package local
