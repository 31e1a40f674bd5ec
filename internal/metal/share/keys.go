package share

import (
	"errors"
	"fmt"
	"io"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/paillier"
)

// ServerKeys is one server's sharing state (Figure 9's Setup): its own Paillier key pair,
// its XOR shares of the anonym master key and the broadcast master key. It never changes.
type ServerKeys struct {
	Role int
	SK   *paillier.PrivateKey
	AMK  [16]byte
	BMK  [16]byte
}

const (
	keysVersion = 1
	keysLen     = 2 + 32 + paillier.PrivateKeyLen
)

var (
	bucketShare = []byte("metal-share")
	keyKeys     = []byte("keys")
)

// NewServerKeys draws a Paillier key pair (a second or so) and the master-key shares.
func NewServerKeys(role int, rnd io.Reader) (*ServerKeys, error) {
	if role != 1 && role != 2 {
		return nil, fmt.Errorf("share: role %d", role)
	}
	k := &ServerKeys{Role: role}
	if _, err := io.ReadFull(rnd, k.AMK[:]); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(rnd, k.BMK[:]); err != nil {
		return nil, err
	}
	var err error
	k.SK, err = paillier.GenerateKey(rnd)
	return k, err
}

// Marshal: version, role, AMK share, BMK share, Paillier p || q (docs/formats/metal-share.md).
func (k *ServerKeys) Marshal() []byte {
	out := []byte{keysVersion, byte(k.Role)}
	out = append(append(out, k.AMK[:]...), k.BMK[:]...)
	return append(out, k.SK.Bytes()...)
}

// UnmarshalServerKeys reads Marshal's output.
func UnmarshalServerKeys(b []byte) (*ServerKeys, error) {
	if len(b) != keysLen || b[0] != keysVersion || (b[1] != 1 && b[1] != 2) {
		return nil, errors.New("share: stored keys are not version-1 sharing keys")
	}
	k := &ServerKeys{Role: int(b[1])}
	copy(k.AMK[:], b[2:18])
	copy(k.BMK[:], b[18:34])
	var err error
	k.SK, err = paillier.ParsePrivateKey(b[34:])
	return k, err
}

// LoadKeys returns the keys stored in db, generating and storing them first if there are
// none (at 'veil metal server init', or on the first start of a server initialized before
// sharing existed).
func LoadKeys(db *bbolt.DB, role int, rnd io.Reader) (*ServerKeys, error) {
	var k *ServerKeys
	err := db.View(func(tx *bbolt.Tx) error {
		if bk := tx.Bucket(bucketShare); bk != nil {
			if v := bk.Get(keyKeys); v != nil {
				var err error
				k, err = UnmarshalServerKeys(v)
				return err
			}
		}
		return nil
	})
	if err != nil || k != nil {
		if k != nil && k.Role != role {
			return nil, fmt.Errorf("share: stored keys are for server %d", k.Role)
		}
		return k, err
	}
	if k, err = NewServerKeys(role, rnd); err != nil {
		return nil, err
	}
	return k, db.Update(func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketShare)
		if err != nil {
			return err
		}
		if bk.Get(keyKeys) != nil {
			return errors.New("share: keys appeared concurrently")
		}
		return bk.Put(keyKeys, k.Marshal())
	})
}
