package storeserver

import (
	"bytes"
	"crypto/sha256"
	"os"
	"testing"
)

// The statements of a node of schema version 2 (session 14) still running beside nodes of
// this version after they migrated the database (pgMigrations: such nodes keep working
// until they restart): its hold and the release of its pin. It names no key: a row it
// records is not keyed, and it stores its copy under the hash alone, whatever row it pins.
const (
	v2Hold = `INSERT INTO veil_blobs (hash, size, refs, pins, pinned_until, gen)
		VALUES ($1, $2, 0, 1, now() + $3 * INTERVAL '1 second', $4)
		ON CONFLICT (hash) DO UPDATE SET pins = veil_blobs.pins + 1,
			pinned_until = CASE WHEN veil_blobs.pinned_until > EXCLUDED.pinned_until
				THEN veil_blobs.pinned_until ELSE EXCLUDED.pinned_until END
		WHERE NOT veil_blobs.deleting
		RETURNING gen`
	v2Release = `UPDATE veil_blobs SET pins = pins - 1 WHERE hash = $1 AND gen = $2 AND pins > 0`
)

// During a rolling upgrade, a node of version 2 that uploads content a node of this
// version holds (a keyed row, its copy still on its way) pins the same row, stores its copy
// under the hash alone and is acknowledged; when the newer node's upload then fails, the
// row's keyed copy never exists. Found by review: every node of this version then failed
// to read the file (content unreadable, an integrity error), and once the older nodes were
// restarted no node could, though the bytes were in the blob store (gc keeps a copy by the
// hash alone while any row of the content exists). A row's copy missing under its key is
// now looked for under the hash alone (openRecorded); the read is verified as before. fsck
// does not count that copy as an orphan (session 16's did, and gc never removed it).
func TestPGOlderNodeUploadReadsOnNewer(t *testing.T) {
	s := newPGService(t, Config{})
	ns, _ := addUser(t, s, "alice")
	data := randBytes(53, 200<<10)
	h, size := sha256.Sum256(data), int64(len(data))
	pin, err := s.meta.hold(t.Context(), h, size) // the newer node's upload, its copy not stored yet
	if err != nil || pin.key == 0 {
		t.Fatalf("hold: key %d %v, want a keyed row", pin.key, err)
	}

	pg := s.meta.(*pgMeta)
	var gen int64
	if err := pg.pool.QueryRow(t.Context(), v2Hold, h[:], size, 10, newBlobGen()).Scan(&gen); err != nil || gen != pin.gen {
		t.Fatalf("the older node's hold: generation %d %v, want the row's %d", gen, err, pin.gen)
	}
	f, err := os.CreateTemp(s.tmpDir, "up-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	f.Close()
	defer os.Remove(f.Name())
	if err := s.blobs.commit(t.Context(), blobID{h: h}, f.Name(), size); err != nil { // named as version 2 names it
		t.Fatal(err)
	}
	if err := s.meta.updateNames(t.Context(), "alice", linkNames("", "f"), ns.link("", "f", h, size, nil, gen)); err != nil {
		t.Fatalf("the older node's reference: %v", err)
	}
	if _, err := pg.pool.Exec(t.Context(), v2Release, h[:], gen); err != nil {
		t.Fatal(err)
	}
	pin.release() // the newer node's upload fails: its copy never arrives

	read := func(when string) {
		t.Helper()
		if got, err := getBytes(t, ns, "", "f"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: the acknowledged file reads %d bytes, %v", when, len(got), err)
		}
	}
	read("on a node of this version")
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	read("after gc")
	fsckNoGarbage(t, s, "with the older node's copy of a keyed row")
	putBytes(t, ns, "", "g", data) // a put of the content stores the row's own copy
	rc, _, err := s.blobs.open(t.Context(), blobID{h, pin.key})
	if err != nil {
		t.Fatalf("the row's copy after a put of its content: %v", err)
	}
	rc.Close()
	read("after a put of the content")
	fsckNoGarbage(t, s, "with both copies") // gc keeps the older node's copy while the row exists
}
