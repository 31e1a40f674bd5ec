package share

import (
	"crypto/aes"
	"crypto/rand"
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/paillier"
)

// TestSendVerdictIsNoAnonymOracle (guarantees g and a): a sender learns its send's verdict.
// If that verdict depends on the anonym, the sender has an oracle on the receiver's
// secret: adding chosen offsets to both Paillier shares (the anonym is additively
// homomorphic) keeps s2 - s1 = s but moves each decrypted share across the circuit's
// "in range" bound (2^392) or below zero (a wrap mod N), so the verdict answers
// "s1 >= t?" or "s2 < t?" for any t. Binary search recovers s1 and s2, hence s = ID_U || i
// || mac: a malicious user given one of Bob's anonyms learns Bob's ID_U (the same in all
// of Bob's anonyms), and two such users link Bob's anonyms.
//
// The servers are modelled exactly as Party.Send runs them (each decrypts its own
// ciphertext with decryptShare, and the send circuit is evaluated in the clear on both
// parties' inputs); the attacker's ciphertexts are c·(1+xN) mod N^2, no rerandomization.
func TestSendVerdictIsNoAnonymOracle(t *testing.T) {
	keys := serverKeys(t)
	sk1, sk2 := keys[0].SK, keys[1].SK
	var capKey, amk, bmk [16]byte
	rand.Read(capKey[:])
	rand.Read(amk[:])
	rand.Read(bmk[:])
	send, err := sendCircuit()
	if err != nil {
		t.Fatal(err)
	}

	// Mallory's own account capability {RWS, first 1000, count 4}: she may share file 1000.
	malCap := sealCapability(t, capKey, ac.Description{Perm: ac.Read | ac.Write | ac.Share, First: 1000, Count: 4})

	// Bob: ID 77 (his account's first file id), AK = AES_AMK(ID || 0^8); one of his
	// anonyms was given to Mallory.
	bob := UserKeys{ID: 77}
	blk, _ := aes.NewCipher(amk[:])
	idBlk := make([]byte, 16)
	binary.LittleEndian.PutUint64(idBlk, bob.ID)
	blk.Encrypt(bob.AK[:], idBlk)
	an, err := NewAnonym(bob, 9, &sk1.PublicKey, &sk2.PublicKey, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	req := append(append([]byte{}, malCap...), binary.LittleEndian.AppendUint64(nil, 1000)...)
	req = append(req, byte(ac.Read))
	zero := func(n int) []bool { return make([]bool, n) }
	// verdict is what Mallory's client learns from one send of (c1·(1+x1 N1), c2·(1+x2 N2)).
	queries := 0
	verdict := func(x1, x2 *big.Int) bool {
		queries++
		c1 := addPlainNoRand(&sk1.PublicKey, an.C1, x1)
		c2 := addPlainNoRand(&sk2.PublicKey, an.C2, x2)
		p1 := &Party{keys: keys[0]}
		p2 := &Party{keys: keys[1]}
		v1, r1 := p1.decryptShare(paillier.CiphertextBytes(c1))
		v2, r2 := p2.decryptShare(paillier.CiphertextBytes(c2))
		tape := make([]byte, tapeBits/8)
		rand.Read(tape)
		in1 := append(append(append(append(circuit.BytesToBits(capKey[:]), circuit.BytesToBits(amk[:])...), circuit.BytesToBits(bmk[:])...), circuit.BytesToBits(tape)...), circuit.BytesToBits(req)...)
		in1 = append(append(in1, wideBits(v1)...), r1)
		in2 := append(zero(3*128+tapeBits+SendRequestLen*8), wideBits(v2)...)
		in2 = append(in2, r2)
		o, err := send.Eval(in1, in2)
		if err != nil {
			t.Fatal(err)
		}
		return o[EntryLen*8]
	}
	if !verdict(big.NewInt(0), big.NewInt(0)) {
		t.Fatal("the untouched anonym is refused: the model of the servers is wrong")
	}
	neg := func(pk *paillier.PublicKey, x *big.Int) *big.Int { return new(big.Int).Sub(pk.N, x) }
	// s1: largest t with "s1 >= t" (offset -t on both shares).
	lo, hi := big.NewInt(0), new(big.Int).Lsh(big.NewInt(1), ShareBits) // s1 in [lo, hi)
	for new(big.Int).Sub(hi, lo).Cmp(big.NewInt(1)) > 0 {
		mid := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		if verdict(neg(&sk1.PublicKey, mid), neg(&sk2.PublicKey, mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	s1 := lo
	// s2 in [s1, s1 + 2^224): smallest t with "s2 < t" (offset 2^392 - t on both shares).
	wide := new(big.Int).Lsh(big.NewInt(1), WideBits)
	lo, hi = new(big.Int).Set(s1), new(big.Int).Add(s1, new(big.Int).Lsh(big.NewInt(1), SecretBits))
	for new(big.Int).Sub(hi, lo).Cmp(big.NewInt(1)) > 0 {
		mid := new(big.Int).Rsh(new(big.Int).Add(lo, hi), 1)
		off := new(big.Int).Sub(wide, mid)
		if verdict(off, off) { // s2 < mid
			hi = mid
		} else {
			lo = mid
		}
	}
	s := new(big.Int).Sub(lo, s1)
	id := new(big.Int).Rsh(s, MACBits+IndexBits).Uint64()
	index := uint32(new(big.Int).Rsh(s, MACBits).Uint64())
	if id == bob.ID && index == 9 {
		t.Fatalf("a sender holding one of Bob's anonyms recovered his ID_U %d and the anonym's index %d from %d send verdicts", id, index, queries)
	}
	t.Logf("%d queries; recovered id %d index %d (Bob's: %d, 9)", queries, id, index, bob.ID)
}

// addPlainNoRand is c·(1+xN) mod N^2 (x taken mod N): the attacker's homomorphic offset.
func addPlainNoRand(pk *paillier.PublicKey, c, x *big.Int) *big.Int {
	n2 := new(big.Int).Mul(pk.N, pk.N)
	g := new(big.Int).Mul(new(big.Int).Mod(x, pk.N), pk.N)
	g.Add(g, big.NewInt(1))
	return g.Mul(g, c).Mod(g, n2)
}

// sealCapability is the capability for d under key, made with the library's EAX.
func sealCapability(t *testing.T, key [16]byte, d ac.Description) []byte {
	blk, _ := aes.NewCipher(key[:])
	aead, err := eax.NewEAX(blk)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	p := d.Encode()
	return aead.Seal(nonce, nonce, p[:], nil)
}
