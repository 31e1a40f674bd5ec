package share

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"math/big"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/paillier"
)

// TestShareReceiveRead is the paper's Figure 8 through both servers' 2PC: Bob enrols and
// makes an anonym; Alice sends a read capability for one of her files to it; Bob finds it
// in the list, and Metal-AC lets it read that file only, never write it.
func TestShareReceiveRead(t *testing.T) {
	r := newRig(t)
	aliceCap, aliceFirst := r.account()
	bobCap, bobFirst := r.account()
	bob, err := r.enroll(bobCap)
	if err != nil {
		t.Fatal(err)
	}
	if bob.ID != bobFirst {
		t.Fatalf("bob's ID %d, want his first file id %d", bob.ID, bobFirst)
	}
	an, err := NewAnonym(bob, 3, r.pk(0), r.pk(1), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	file := aliceFirst + 1
	if _, err := r.send(SendRequest{Capability: aliceCap, File: file, Perm: ac.Read, To: an}); err != nil {
		t.Fatal(err)
	}
	got, next := r.receive(bob, 0)
	if len(got) != 1 || got[0].File != file || got[0].Perm != ac.Read || got[0].Index != 3 {
		t.Fatalf("bob received %+v", got)
	}
	if !r.allowed(got[0].Capability, file, ac.Read) {
		t.Fatal("the received capability does not read the shared file")
	}
	if r.allowed(got[0].Capability, file, ac.Write) || r.allowed(got[0].Capability, aliceFirst, ac.Read) {
		t.Fatal("a read capability for one file allowed a write or another file")
	}
	// Nothing new since: a second receive from the cursor is empty.
	if again, _ := r.receive(bob, next); len(again) != 0 {
		t.Fatalf("second receive got %d entries", len(again))
	}
	// A write grant gives read and write.
	if _, err := r.send(SendRequest{Capability: aliceCap, File: file, Perm: ac.Read | ac.Write, To: an}); err != nil {
		t.Fatal(err)
	}
	got, _ = r.receive(bob, next)
	if len(got) != 1 || !r.allowed(got[0].Capability, file, ac.Write) {
		t.Fatalf("write grant: %+v", got)
	}
}

// TestForgedAnonymsRefused (guarantee h, anonym authenticity): anonyms a malicious user can
// make without Bob's anonym key, and Bob's anonym altered homomorphically to another index
// or another ID, are all refused inside 2PC: the entry each produces opens for nobody. The
// sender is not told (its verdict covers its capability and request only): a verdict on
// the anonym is an oracle on the receiver's secret (TestSendVerdictIsNoAnonymOracle).
func TestForgedAnonymsRefused(t *testing.T) {
	r := newRig(t)
	aliceCap, aliceFirst := r.account()
	bobCap, _ := r.account()
	malCap, _ := r.account()
	bob, err := r.enroll(bobCap)
	if err != nil {
		t.Fatal(err)
	}
	mal, err := r.enroll(malCap)
	if err != nil {
		t.Fatal(err)
	}
	an, _ := NewAnonym(bob, 1, r.pk(0), r.pk(1), rand.Reader)
	shift := func(a Anonym, delta *big.Int) Anonym { // adds delta to s through share 2
		c2, err := r.pk(1).AddPlain(rand.Reader, a.C2, delta)
		if err != nil {
			t.Fatal(err)
		}
		return Anonym{C1: a.C1, C2: c2}
	}
	wrongKey := mal
	wrongKey.ID = bob.ID // Bob's ID, the attacker's own anonym key
	forgedWithOwnKey, _ := NewAnonym(wrongKey, 2, r.pk(0), r.pk(1), rand.Reader)
	swapped, _ := NewAnonym(bob, 1, r.pk(1), r.pk(0), rand.Reader) // shares under the wrong servers' keys
	randomCT := func() Anonym {
		a, _ := NewAnonym(bob, 1, r.pk(0), r.pk(1), rand.Reader)
		c, _ := r.pk(1).Encrypt(rand.Reader, big.NewInt(12345))
		return Anonym{C1: a.C1, C2: c}
	}
	cases := map[string]Anonym{
		"index shifted by one":        shift(an, new(big.Int).Lsh(big.NewInt(1), MACBits)),
		"ID shifted by one":           shift(an, new(big.Int).Lsh(big.NewInt(1), MACBits+IndexBits)),
		"MAC bit flipped":             shift(an, big.NewInt(1)),
		"made with another user's AK": forgedWithOwnKey,
		"shares swapped":              swapped,
		"random second ciphertext":    randomCT(),
	}
	var entries [][]byte
	for name, a := range cases {
		// A malicious sender's client may skip the rerandomization (and its checks): the
		// swapped shares, for one, need not be units modulo the other server's N^2.
		e, err := r.sendParts(rawParts(t, SendRequest{Capability: aliceCap, File: aliceFirst, Perm: ac.Read, To: a}))
		if err != nil {
			t.Errorf("%s: %v, want the verdict of a good capability (the anonym's is not told)", name, err)
		}
		entries = append(entries, e)
	}
	// A malicious sender's own client need not rerandomize or check anything: a second
	// "ciphertext" that is not a unit mod N^2 reaches Server 2 as is.
	req := SendRequest{Capability: aliceCap, File: aliceFirst, Perm: ac.Read, To: an}
	to1, to2, err := req.Split(r.pk(0), r.pk(1), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	copy(to2[SendRequestLen:], paillier.CiphertextBytes(r.pk(1).N))
	e, err := r.sendParts(to1, to2)
	if err != nil {
		t.Errorf("non-unit ciphertext: %v, want the verdict of a good capability", err)
	}
	entries = append(entries, e)
	for _, k := range []UserKeys{bob, mal} {
		for _, e := range entries {
			if _, ok, _ := OpenEntry(k.BK, e); ok {
				t.Fatal("a refused send's entry opens for a user")
			}
		}
	}
	// The untouched anonym still works (the refusals changed nothing).
	if _, err := r.send(SendRequest{Capability: aliceCap, File: aliceFirst, Perm: ac.Read, To: an}); err != nil {
		t.Fatal(err)
	}
}

// TestCapabilityRulesForSending: a user cannot obtain a capability for a file it was not
// sent: sharing needs an account capability (with Share) covering the file; a received
// capability cannot be passed on, nor used to enrol; a forged capability is refused.
func TestCapabilityRulesForSending(t *testing.T) {
	r := newRig(t)
	aliceCap, aliceFirst := r.account()
	bobCap, bobFirst := r.account()
	bob, _ := r.enroll(bobCap)
	carolCap, _ := r.account()
	carol, _ := r.enroll(carolCap)
	toBob, _ := NewAnonym(bob, 0, r.pk(0), r.pk(1), rand.Reader)
	toCarol, _ := NewAnonym(carol, 0, r.pk(0), r.pk(1), rand.Reader)

	if _, err := r.send(SendRequest{Capability: aliceCap, File: bobFirst, Perm: ac.Read, To: toCarol}); !errors.Is(err, ErrRefused) {
		t.Fatalf("alice shared bob's file: %v", err)
	}
	forged := append([]byte(nil), aliceCap...)
	forged[20] ^= 1
	if _, err := r.send(SendRequest{Capability: forged, File: aliceFirst, Perm: ac.Read, To: toCarol}); !errors.Is(err, ErrRefused) {
		t.Fatalf("altered capability: %v", err)
	}
	if _, err := r.send(SendRequest{Capability: aliceCap, File: aliceFirst, Perm: ac.Read, To: toBob}); err != nil {
		t.Fatal(err)
	}
	got, next := r.receive(bob, 0)
	if len(got) != 1 {
		t.Fatalf("bob got %d", len(got))
	}
	if _, err := r.send(SendRequest{Capability: got[0].Capability, File: aliceFirst, Perm: ac.Read, To: toCarol}); !errors.Is(err, ErrRefused) {
		t.Fatalf("bob passed on a received capability: %v", err)
	}
	if _, err := r.enroll(got[0].Capability); err == nil {
		t.Fatal("enrolled with a received capability")
	}
	if c, _ := r.receive(carol, 0); len(c) != 0 {
		t.Fatalf("carol received %d capabilities she was never sent", len(c))
	}
	_ = next
	// A request with a bad permission is refused before it leaves the client.
	if _, _, err := (SendRequest{Capability: aliceCap, File: aliceFirst, Perm: ac.Share, To: toBob}).Split(r.pk(0), r.pk(1), rand.Reader); err == nil {
		t.Fatal("share permission accepted by Split")
	}
}

// TestEntriesIndistinguishableToThirdUser (guarantees f and g): entries for Bob, for Dave
// and a refused one all have the same size and none opens under Carol's key; entries sent
// to two different anonyms of Bob both open for Bob only.
func TestEntriesIndistinguishableToThirdUser(t *testing.T) {
	r := newRig(t)
	aliceCap, aliceFirst := r.account()
	var users [3]UserKeys
	for i := range users {
		c, _ := r.account()
		var err error
		if users[i], err = r.enroll(c); err != nil {
			t.Fatal(err)
		}
	}
	bob, carol, dave := users[0], users[1], users[2]
	b1, _ := NewAnonym(bob, 1, r.pk(0), r.pk(1), rand.Reader)
	b2, _ := NewAnonym(bob, 2, r.pk(0), r.pk(1), rand.Reader)
	d1, _ := NewAnonym(dave, 1, r.pk(0), r.pk(1), rand.Reader)
	if bytes.Equal(b1.Marshal()[1:513], b2.Marshal()[1:513]) {
		t.Fatal("two anonyms share a ciphertext")
	}
	var entries [][]byte
	for _, a := range []Anonym{b1, b2, d1} {
		e, err := r.send(SendRequest{Capability: aliceCap, File: aliceFirst, Perm: ac.Read, To: a})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	refused, _ := r.send(SendRequest{Capability: aliceCap, File: aliceFirst + 99, Perm: ac.Read, To: b1})
	entries = append(entries, refused)
	for i, e := range entries {
		if len(e) != EntryLen {
			t.Fatalf("entry %d has %d bytes", i, len(e))
		}
		if _, ok, _ := OpenEntry(carol.BK, e); ok {
			t.Fatalf("carol opened entry %d", i)
		}
		_, okBob, _ := OpenEntry(bob.BK, e)
		_, okDave, _ := OpenEntry(dave.BK, e)
		if okBob != (i < 2) || okDave != (i == 2) {
			t.Fatalf("entry %d opens for bob %v, dave %v", i, okBob, okDave)
		}
	}
	got, _ := r.receive(bob, 0)
	idx := map[uint32]bool{}
	for _, g := range got {
		idx[g.Index] = true
	}
	if len(got) != 2 || !idx[1] || !idx[2] {
		t.Fatalf("bob's received indices %v", idx)
	}
}

// rawParts is SendRequest.Split without the rerandomization: the anonym's ciphertexts as given.
func rawParts(t *testing.T, r SendRequest) ([]byte, []byte) {
	p := append(append([]byte{}, r.Capability...), binary.LittleEndian.AppendUint64(nil, r.File)...)
	to1, to2, err := xorSplit(append(p, byte(r.Perm)), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return append(to1, paillier.CiphertextBytes(r.To.C1)...), append(to2, paillier.CiphertextBytes(r.To.C2)...)
}
