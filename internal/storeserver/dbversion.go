package storeserver

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// dbVersion is the version of meta.db (bucket meta, key version, one byte;
// docs/formats/store-records.md):
//   - 1: first version;
//   - 2 (session 15): set with the first blob record with a key;
//   - 3 (session 17): every store this veil creates or opens (upgradeDB): an empty file
//     entry references no blob record. Session 16 stopped recording the empty content
//     without raising the version, so a session 15 binary still opened such a store and
//     failed on its empty objects (locks, marks).
//
// Binaries of session 14 and older accept version 1 only, of sessions 15 and 16 versions 1
// and 2: each refuses any other at open ("bad metadata record: database version [3], want
// 1 or 2"), so none of them serves a store this veil has opened.
const dbVersion = 3

var versionKey = []byte("version")

// ErrNewerStore is a store a newer veil has written: this one refuses it rather than
// misread it.
var ErrNewerStore = errors.New("upgrade veil")

// parseDBVersion reads the database version: the version of an older store (upgradeDB takes
// it to dbVersion), ErrNewerStore for a newer one, errRecord for anything else.
func parseDBVersion(v []byte) (byte, error) {
	switch {
	case len(v) == 0:
		return 0, fmt.Errorf("%w: no database version", errRecord)
	case len(v) != 1 || v[0] == 0:
		return 0, fmt.Errorf("%w: database version %x, want one byte, 1 to %d", errRecord, v, dbVersion)
	case v[0] > dbVersion:
		return 0, fmt.Errorf("database version %d is newer than this veil's (%d): a newer veil opened the store: %w", v[0], dbVersion, ErrNewerStore)
	}
	return v[0], nil
}

// checkBoltDB refuses a database without the store's buckets or of an unknown version, and
// takes an older version to dbVersion (upgradeDB), returning the version it was (0: it
// was dbVersion).
func checkBoltDB(db *bolt.DB) (byte, error) {
	var v byte
	err := db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil || tx.Bucket(bucketUsers) == nil || tx.Bucket(bucketNS) == nil || tx.Bucket(bucketBlobs) == nil || tx.Bucket(bucketData) == nil {
			return fmt.Errorf("%w: missing buckets", errRecord)
		}
		var err error
		v, err = parseDBVersion(m.Get(versionKey))
		return err
	})
	if err != nil || v == dbVersion {
		return 0, err
	}
	return v, upgradeDB(db)
}

// upgradeDB takes a store of version 1 or 2 to dbVersion in one transaction (a crash
// leaves it as it was; run again, it does nothing): it removes the record of the empty
// content that stores written before session 16 kept, with the count their empty objects
// gave it (no longer maintained since), and raises the version. Nothing reads that record
// (an empty object's entry is all there is, put.go: emptyContent), and no other process
// has the database open (bbolt's file lock), so removing it loses nothing; its inline
// value goes with it, a copy in the blob store (none was ever written: the empty content
// is inline) would be an orphan gc removes. A record that does not decode is left for
// fsck to report.
func upgradeDB(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		v, err := parseDBVersion(m.Get(versionKey))
		if err != nil || v == dbVersion {
			return err
		}
		blobs := tx.Bucket(bucketBlobs)
		if r, err := parseBlobRec(blobs.Get(emptyContent[:])); err == nil { // a bad one stays for fsck to report
			if r.inline {
				if err := tx.Bucket(bucketData).Delete(dataKey(r.dataID)); err != nil {
					return err
				}
			}
			if err := blobs.Delete(emptyContent[:]); err != nil {
				return err
			}
		}
		return m.Put(versionKey, []byte{dbVersion})
	})
}
