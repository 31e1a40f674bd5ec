package share

import (
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"math/big"
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/paillier"
	"github.com/veil-project/veil/internal/testutil"
)

const vectorFile = "../../../testdata/metal/share-vectors.json"

// shareVector pins docs/formats/metal-anonym.md and docs/formats/metal-share.md: the
// anonym's secret layout and binary form (with fixed keys and randomness), the enrolment
// and send circuits' outputs on fixed inputs (evaluated in the clear), the entry they make
// and the list reply carrying it.
type shareVector struct {
	PaillierSK1, PaillierSK2 string
	CapKey, AMK, BMK         string // XOR of the two servers' shares (share 2 is zero here)
	AccountCapability        string
	ID                       uint64
	AK, BK                   string
	Index                    uint32
	Secret                   string // s = ID || i || mac as a big-endian integer
	Anonym                   string // binary form, hex
	AnonymText               string
	File                     uint64
	Perm                     uint8
	Tape                     string // capability nonce || entry nonce || dummy key
	Entry                    string
	ReceivedCapability       string
	ListReply                string
	// A list download's credential check (listCircuit) on AccountCapability and on
	// ReceivedCapability: only an account capability may download.
	ListByAccount, ListByReceived bool
}

// vectorPrime is the first prime from a SHA-512-derived 1024-bit odd start: deterministic
// keys without a random source.
func vectorPrime(label string) *big.Int {
	h1, h2 := sha512.Sum512([]byte(label+"/1")), sha512.Sum512([]byte(label+"/2"))
	x := new(big.Int).SetBytes(append(h1[:], h2[:]...))
	x.SetBit(x, 1023, 1).SetBit(x, 1022, 1).SetBit(x, 0, 1)
	for !x.ProbablyPrime(20) {
		x.Add(x, big.NewInt(2))
	}
	return x
}

func vectorKey(t *testing.T, label string) *paillier.PrivateKey {
	p, q := vectorPrime(label+"p"), vectorPrime(label+"q")
	sk, err := paillier.ParsePrivateKey(append(p.FillBytes(make([]byte, 128)), q.FillBytes(make([]byte, 128))...))
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func bits16(s string) []bool { b, _ := hex.DecodeString(s); return circuit.BytesToBits(b) }

func TestShareVectors(t *testing.T) {
	rnd := mrand.NewChaCha8([32]byte{'v', 'e', 'i', 'l'})
	sk1, sk2 := vectorKey(t, "veil share vector 1"), vectorKey(t, "veil share vector 2")
	v := shareVector{PaillierSK1: hex.EncodeToString(sk1.Bytes()), PaillierSK2: hex.EncodeToString(sk2.Bytes()),
		CapKey: "000102030405060708090a0b0c0d0e0f", AMK: "101112131415161718191a1b1c1d1e1f", BMK: "202122232425262728292a2b2c2d2e2f",
		Index: 5, File: 1 << 20, Perm: uint8(ac.Read), Tape: hex.EncodeToString(make([]byte, 48))}
	zero := make([]bool, 128)
	// An account capability {RWS, first 2^20, count 1}, sealed by the grant fragment.
	gb := circuit.NewBuilder()
	key, nonce := gb.Input(1, 128), gb.Input(1, 128)
	gb.Output(circuit.Public, ac.GrantFile(gb, key, nonce, circuit.Const(1<<20, 64), circuit.Const(uint64(ac.Read|ac.Write|ac.Share), 8))...)
	gc, _ := gb.Build()
	out, err := gc.Eval(append(bits16(v.CapKey), make([]bool, 128)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	accountCap := circuit.BitsToBytes(out)
	v.AccountCapability = hex.EncodeToString(accountCap)

	enroll, _ := enrollCircuit()
	in1 := append(append(append(bits16(v.CapKey), bits16(v.AMK)...), bits16(v.BMK)...), circuit.BytesToBits(accountCap)...)
	in2 := append(append(append(zero, zero...), zero...), make([]bool, 384)...)
	out, err = enroll.Eval(in1, in2)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := FinishEnroll(append([]byte{b2u(out[0])}, circuit.BitsToBytes(out[1:])...), make([]byte, EnrollReplyLen))
	if err != nil {
		t.Fatal(err)
	}
	v.ID, v.AK, v.BK = keys.ID, hex.EncodeToString(keys.AK[:]), hex.EncodeToString(keys.BK[:])
	s := secret(keys.ID, v.Index, anonymMAC(keys.AK, keys.ID, v.Index))
	v.Secret = hex.EncodeToString(s.FillBytes(make([]byte, SecretBits/8)))
	an, err := NewAnonym(keys, v.Index, &sk1.PublicKey, &sk2.PublicKey, rnd)
	if err != nil {
		t.Fatal(err)
	}
	v.Anonym, v.AnonymText = hex.EncodeToString(an.Marshal()), an.String()

	send, _ := sendCircuit()
	req := append(append([]byte{}, accountCap...), binary.LittleEndian.AppendUint64(nil, v.File)...)
	req = append(req, v.Perm)
	d1, _ := sk1.Decrypt(an.C1)
	d2, _ := sk2.Decrypt(an.C2)
	in1 = append(append(append(append(bits16(v.CapKey), bits16(v.AMK)...), bits16(v.BMK)...), bits16(v.Tape)...), circuit.BytesToBits(req)...)
	in1 = append(append(in1, wideBits(d1)...), true)
	in2 = append(append(append(append(zero, zero...), zero...), make([]bool, tapeBits)...), make([]bool, SendRequestLen*8)...)
	in2 = append(append(in2, wideBits(d2)...), true)
	out, err = send.Eval(in1, in2)
	if err != nil {
		t.Fatal(err)
	}
	if !out[EntryLen*8] {
		t.Fatal("the vector's send is refused")
	}
	entry := circuit.BitsToBytes(out[:EntryLen*8])
	v.Entry = hex.EncodeToString(entry)
	rc, ok, err := OpenEntry(keys.BK, entry)
	if err != nil || !ok || rc.File != v.File || rc.Index != v.Index || rc.Perm != ac.Read {
		t.Fatalf("vector entry opens as %+v, %v, %v", rc, ok, err)
	}
	v.ReceivedCapability = hex.EncodeToString(rc.Capability)
	v.ListReply = hex.EncodeToString(EncodeListReply(3, 4, entry))
	list, _ := listCircuit()
	for _, c := range []struct {
		capability []byte
		ok         *bool
	}{{accountCap, &v.ListByAccount}, {rc.Capability, &v.ListByReceived}} {
		out, err := list.Eval(append(bits16(v.CapKey), circuit.BytesToBits(c.capability)...), append(zero, make([]bool, ListRequestLen*8)...))
		if err != nil {
			t.Fatal(err)
		}
		*c.ok = out[0]
	}
	testutil.Golden(t, vectorFile, v)
}
