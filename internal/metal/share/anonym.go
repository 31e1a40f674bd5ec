package share

import (
	"crypto/aes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/veil-project/veil/internal/metal/paillier"
)

// Sizes of the anonym's secret s = ID || i || mac (paper Figure 9), as an integer whose
// low 128 bits are the MAC, then 32 bits of index, then 64 bits of ID.
const (
	IDBits     = 64
	IndexBits  = 32
	MACBits    = 128
	SecretBits = IDBits + IndexBits + MACBits // |s| = 224
	Rho        = 80                           // statistical security parameter (paper: 80)
	ShareBits  = SecretBits + Rho             // s1 uniform in [0, 2^304)
	RerandBits = SecretBits + 2*Rho           // r uniform in [0, 2^384)
	WideBits   = 392                          // shares enter 2PC as 392-bit integers (> 2^385 bound)

	anonymVersion = 1
	AnonymLen     = 1 + 2*paillier.CiphertextLen // version || c1 || c2
	anonymPrefix  = "veil-anonym-"
)

// UserKeys is what enrolment gives a user (Figure 9's UserKeyGen, plus the broadcast key
// of Section 6.2).
type UserKeys struct {
	ID uint64   // ID_U: the account's first file id
	AK [16]byte // anonym key, AES_AMK(ID)
	BK [16]byte // broadcast key, AES_BMK(ID)
}

// Anonym is (c1, c2): Paillier ciphertexts under Server 1's and Server 2's keys of two
// integer shares of s with s2 - s1 = s.
type Anonym struct {
	C1, C2 *big.Int
}

// macBlock is the MAC input: ID (8 bytes LE), index (4 bytes LE), 4 zero bytes.
func macBlock(id uint64, index uint32) []byte {
	p := make([]byte, 16)
	binary.LittleEndian.PutUint64(p, id)
	binary.LittleEndian.PutUint32(p[8:], index)
	return p
}

// anonymMAC is MAC_AK(ID || i): AES-128 under AK of one block (a PRF on a fixed-length
// input is a MAC). The circuit computes the same with Builder.AES128.
func anonymMAC(ak [16]byte, id uint64, index uint32) [16]byte {
	blk, _ := aes.NewCipher(ak[:])
	var out [16]byte
	blk.Encrypt(out[:], macBlock(id, index))
	return out
}

// secret is s as an integer: mac (LE) in bits 0..127, index in 128..159, ID in 160..223.
func secret(id uint64, index uint32, mac [16]byte) *big.Int {
	le := append(append(append([]byte{}, mac[:]...), binary.LittleEndian.AppendUint32(nil, index)...), binary.LittleEndian.AppendUint64(nil, id)...)
	return new(big.Int).SetBytes(reverse(le))
}

func reverse(p []byte) []byte {
	out := make([]byte, len(p))
	for i := range p {
		out[len(p)-1-i] = p[i]
	}
	return out
}

func randBits(rnd io.Reader, bits int) (*big.Int, error) {
	return rand.Int(rnd, new(big.Int).Lsh(big.NewInt(1), uint(bits)))
}

// both runs f and g, in parallel when rnd is crypto/rand.Reader (each is one r^N mod N^2;
// that reader is safe for concurrent use), one after the other for any other reader (so
// that a deterministic reader gives deterministic output, as the vectors need).
func both(rnd io.Reader, f, g func()) {
	if rnd != rand.Reader {
		f()
		g()
		return
	}
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	g()
	<-done
}

// NewAnonym makes the user's anonym number index (Figure 9's AnonymGen): no server contact.
func NewAnonym(k UserKeys, index uint32, pk1, pk2 *paillier.PublicKey, rnd io.Reader) (Anonym, error) {
	s := secret(k.ID, index, anonymMAC(k.AK, k.ID, index))
	s1, err := randBits(rnd, ShareBits)
	if err != nil {
		return Anonym{}, err
	}
	s2 := new(big.Int).Add(s1, s)
	var c1, c2 *big.Int
	var err1, err2 error
	both(rnd, func() { c1, err1 = pk1.Encrypt(rnd, s1) }, func() { c2, err2 = pk2.Encrypt(rnd, s2) })
	if err := errors.Join(err1, err2); err != nil {
		return Anonym{}, err
	}
	return Anonym{C1: c1, C2: c2}, nil
}

// Rerandomize is Figure 9's AnonymRerand, run by the sender before every use: the same r
// added to both shares (so s2 - s1 is unchanged), each ciphertext with fresh Paillier
// randomness (AddPlain), so that neither server can link two uses of one anonym.
func (a Anonym) Rerandomize(pk1, pk2 *paillier.PublicKey, rnd io.Reader) (Anonym, error) {
	r, err := randBits(rnd, RerandBits)
	if err != nil {
		return Anonym{}, err
	}
	var c1, c2 *big.Int
	var err1, err2 error
	both(rnd, func() { c1, err1 = pk1.AddPlain(rnd, a.C1, r) }, func() { c2, err2 = pk2.AddPlain(rnd, a.C2, r) })
	if err1 != nil {
		return Anonym{}, fmt.Errorf("anonym: first ciphertext: %w", err1)
	}
	if err2 != nil {
		return Anonym{}, fmt.Errorf("anonym: second ciphertext: %w", err2)
	}
	return Anonym{C1: c1, C2: c2}, nil
}

// Marshal is the binary anonym: version 1, c1, c2 (docs/formats/metal-anonym.md).
func (a Anonym) Marshal() []byte {
	out := []byte{anonymVersion}
	out = append(out, paillier.CiphertextBytes(a.C1)...)
	return append(out, paillier.CiphertextBytes(a.C2)...)
}

// ParseAnonym reads a Marshal'd anonym. It checks the layout only: whether the ciphertexts
// are valid under the servers' keys, and whether the anonym is authentic, only the servers
// can tell (inside 2PC).
func ParseAnonym(b []byte) (Anonym, error) {
	if len(b) != AnonymLen {
		return Anonym{}, fmt.Errorf("anonym: %d bytes, want %d", len(b), AnonymLen)
	}
	if b[0] != anonymVersion {
		return Anonym{}, fmt.Errorf("anonym: version %d, want %d", b[0], anonymVersion)
	}
	n := paillier.CiphertextLen
	c1, c2 := new(big.Int).SetBytes(b[1:1+n]), new(big.Int).SetBytes(b[1+n:])
	if c1.Sign() == 0 || c2.Sign() == 0 {
		return Anonym{}, errors.New("anonym: a ciphertext is zero")
	}
	return Anonym{C1: c1, C2: c2}, nil
}

// String is the text form users exchange out of band: "veil-anonym-" and the binary form
// in unpadded base64url.
func (a Anonym) String() string {
	return anonymPrefix + base64.RawURLEncoding.EncodeToString(a.Marshal())
}

// ParseAnonymText reads the String form (surrounding white space ignored).
func ParseAnonymText(s string) (Anonym, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, anonymPrefix) {
		return Anonym{}, fmt.Errorf("anonym: does not start with %q", anonymPrefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(anonymPrefix):])
	if err != nil {
		return Anonym{}, errors.New("anonym: not base64url after the prefix")
	}
	return ParseAnonym(b)
}
