// Package fusemount serves a DupLESS user's stored files and their snapshots as a
// read-only FUSE file system (veil mount): "current/" is the newest tree, and
// "snapshots/<time>/" each retained snapshot. Every byte is verified as get verifies it
// (dupless.View: authenticated records listed by the root, chunk tags, guarded decryption);
// a chunk that fails is EIO, never unverified bytes. A snapshot's listing (its tree root)
// is loaded when its folder is browsed, and a bounded number are held (dupless.Catalog).
// current/ follows roots published while mounted (Config.Refresh, follow.go).
//
// It adapts dupless.View to go-fuse's node API and runs the mount; it must not import cmd,
// the servers, or any other veil subsystem.
package fusemount
