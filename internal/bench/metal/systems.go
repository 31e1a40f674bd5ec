package metalbench

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/primitive"
)

// system is one of the two constructions compared, both servers in this process over a
// counted loopback link, with the client's side: createAccount returns a capability and
// its first file, access runs one request and returns what the client gets.
type system interface {
	createAccount() ([]byte, uint64, error)
	access(capability []byte, file uint64, op ac.Perm, data []byte) ([]byte, error)
	close()
}

// accountParty is one server's side of CreateAccount (Metal's and Primitive Metal's parties).
type accountParty interface {
	CreateAccount() (capShare, firstShare []byte, err error)
}

// createAccount runs CreateAccount on both servers at once and combines their shares.
func createAccount(s1, s2 accountParty) ([]byte, uint64, error) {
	var c1, c2, f1, f2 []byte
	err := both(func() (err error) { c1, f1, err = s1.CreateAccount(); return },
		func() (err error) { c2, f2, err = s2.CreateAccount(); return })
	if err != nil {
		return nil, 0, err
	}
	return combineAccount(c1, c2, f1, f2)
}

func combineAccount(c1, c2, f1, f2 []byte) ([]byte, uint64, error) {
	c, err := ac.Combine(c1, c2)
	if err != nil {
		return nil, 0, err
	}
	f, err := ac.Combine(f1, f2)
	if err != nil || len(f) != 8 {
		return nil, 0, fmt.Errorf("bench: bad first-file shares")
	}
	return c, binary.LittleEndian.Uint64(f), nil
}

// metalSystem is real Metal: access.Party on each side, bbolt state in a temporary
// directory (DataORAM on Server 1's disk), the client's ElGamal-encrypted block.
type metalSystem struct {
	p      access.Params
	s1, s2 *access.Party
	dbs    []*bbolt.DB
	dir    string
}

func newMetal(l *link, p access.Params) (*metalSystem, error) {
	dir, err := os.MkdirTemp("", "veil-bench-metal-cmp")
	if err != nil {
		return nil, err
	}
	m := &metalSystem{p: p, dir: dir}
	var stores [2]*access.Store
	for i := range stores {
		db, err := bbolt.Open(filepath.Join(dir, fmt.Sprintf("s%d.db", i+1)), 0o600, nil)
		if err != nil {
			m.close()
			return nil, err
		}
		m.dbs = append(m.dbs, db)
		if stores[i], err = access.NewStore(db); err != nil {
			m.close()
			return nil, err
		}
	}
	if _, err := access.Init(stores[0], l.g.Role(), p, rand.Reader); err != nil {
		m.close()
		return nil, err
	}
	if _, err := access.Init(stores[1], l.e.Role(), p, rand.Reader); err != nil {
		m.close()
		return nil, err
	}
	err = both(func() (err error) { m.s1, err = access.NewParty(l.g, stores[0], rand.Reader); return },
		func() (err error) { m.s2, err = access.NewParty(l.e, stores[1], rand.Reader); return })
	if err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

func (m *metalSystem) createAccount() ([]byte, uint64, error) {
	return createAccount(m.s1, m.s2)
}

func (m *metalSystem) access(capability []byte, file uint64, op ac.Perm, data []byte) ([]byte, error) {
	to1, to2, err := access.NewRequest(m.p, m.s1.PublicKey(), capability, file, op, data, rand.Reader)
	if err != nil {
		return nil, err
	}
	req1, user, err := access.SplitServer1Request(m.p, to1)
	if err != nil {
		return nil, err
	}
	var r1, r2 access.Reply
	err = both(func() (err error) { r1, err = m.s1.Access(req1, user); return },
		func() (err error) { r2, err = m.s2.Access(to2, nil); return })
	if err != nil {
		return nil, err
	}
	return access.Finish(m.p, r1.Marshal(), r2.Marshal())
}

func (m *metalSystem) close() {
	for _, db := range m.dbs {
		db.Close()
	}
	os.RemoveAll(m.dir)
}

// primitiveSystem is Primitive Metal: the whole ORAM, data included, inside 2PC.
type primitiveSystem struct {
	p      primitive.Params
	s1, s2 *primitive.Party
}

func newPrimitive(l *link, p primitive.Params) (*primitiveSystem, error) {
	s := &primitiveSystem{p: p}
	err := both(func() (err error) { s.s1, err = primitive.NewParty(l.g, p, rand.Reader); return },
		func() (err error) { s.s2, err = primitive.NewParty(l.e, p, rand.Reader); return })
	return s, err
}

func (s *primitiveSystem) createAccount() ([]byte, uint64, error) {
	return createAccount(s.s1, s.s2)
}

func (s *primitiveSystem) access(capability []byte, file uint64, op ac.Perm, data []byte) ([]byte, error) {
	to1, to2, err := primitive.NewRequest(s.p, capability, file, op, data, rand.Reader)
	if err != nil {
		return nil, err
	}
	var r1, r2 primitive.Reply
	err = both(func() (err error) { r1, err = s.s1.Access(to1); return },
		func() (err error) { r2, err = s.s2.Access(to2); return })
	if err != nil {
		return nil, err
	}
	return primitive.Finish(s.p, op, r1, r2)
}

func (s *primitiveSystem) close() {}

// checkRead is the benchmark's own correctness check: a read returns what was written.
func checkRead(got, want []byte) error {
	if !bytes.Equal(got, want) {
		return fmt.Errorf("bench: read back %d bytes that differ from the write", len(got))
	}
	return nil
}
