package dupless

import (
	"context"
	"encoding/binary"
	"time"
)

// A lone put's next root, drafted ahead. The next root lists every record path of the
// namespace; compressing it is most of the CPU of sealing it, and a lone put knows all of
// it but one hash (its record's, known once the file is encrypted, after the key request)
// as soon as root n is read (loneFromRoot). So the draft compresses the plaintext around
// that hash while the key request is out, as two zstd frames, and finishing it compresses
// the root's number and time (its time is when it is sealed) and the hash, and encrypts. A zstd stream is one or more frames (RFC 8878, section 3) that a
// reader decompresses into one plaintext: the root's format is unchanged, and any veil
// reads it (docs/formats/key-record.md, "Tree root").

// rootDraft is the next root drafted on base with the record at path added or replaced.
type rootDraft struct {
	base       *treeRoot
	path       string
	next       *treeRoot // its time and path's hash are set by finishDraft
	head, tail []byte    // zstd frames of the plaintext after its time up to path's hash, and after the hash
}

// rootTimeEnd is where the marshalled root's time ends (seq, then time): the draft
// compresses from there, so that the root's time is the time it is sealed, as sealRoot's.
const rootTimeEnd = 8 + 8

// draftRoot drafts the root after base that lists path (with a hash to be given).
func (k *userKeys) draftRoot(base *treeRoot, path string) *rootDraft {
	next := nextEntries(base, nil)
	next.Entries[path] = [32]byte{}
	plain := next.marshal()
	off := hashOffset(next.Entries, path)
	return &rootDraft{base: base, path: path, next: next,
		head: rootEnc.EncodeAll(plain[rootTimeEnd:off], nil), tail: rootEnc.EncodeAll(plain[off+32:], nil)}
}

// hashOffset is where path's hash starts in the marshalled root listing entries
// (treeRoot.marshal: a 52-byte head, then sorted entries of length, path, hash).
func hashOffset(entries map[string][32]byte, path string) int {
	off := rootHeadSize
	for p := range entries {
		if p < path {
			off += 2 + len(p) + 32
		}
	}
	return off + 2 + len(path)
}

// finishDraft seals the draft's root, timed now, with h as path's hash: the root and its
// object bytes (four frames: seq and time, the head, the hash, the tail).
func (k *userKeys) finishDraft(d *rootDraft, h [32]byte) (*treeRoot, []byte) {
	d.next.Entries[d.path] = h
	d.next.Time = time.Now().UnixNano()
	var st [rootTimeEnd]byte
	binary.BigEndian.PutUint64(st[:8], d.next.Seq)
	binary.BigEndian.PutUint64(st[8:], uint64(d.next.Time))
	z := rootEnc.EncodeAll(st[:], make([]byte, 0, 64+len(d.head)+len(d.tail)))
	z = append(z, d.head...)
	z = rootEnc.EncodeAll(h[:], z)
	z = append(z, d.tail...)
	return d.next, k.sealCompressed(d.next, z, newRootNonce())
}

// startRootDraft drafts, in the background, the next root of a lone put whose record goes
// to path, on base; nextRootWith takes it if the command has changed nothing else.
func (c *Client) startRootDraft(base *treeRoot, path string) {
	if base.base != nil || entriesSize(base.Entries) > rootBaseFrom-locklessRootRoom {
		return // a version 2 root: small, nothing to draft
	}
	c.draft.start(context.Background(), path, func(context.Context) (*rootDraft, error) {
		return c.keys.draftRoot(base, path), nil
	})
}

// takeRootDraft returns the draft for path on base, or nil: none was started for them, or
// the command's changes are more than that one record.
func (c *Client) takeRootDraft(base *treeRoot, changes int, path string) *rootDraft {
	w := c.draft.take(path)
	if w == nil {
		return nil
	}
	d, _ := w.wait(context.Background()) // CPU only: it ends
	if d == nil || d.base != base || changes != 0 {
		return nil
	}
	return d
}
