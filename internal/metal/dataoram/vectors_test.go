package dataoram

import (
	"bytes"
	"encoding/hex"
	"github.com/veil-project/veil/internal/testutil"
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/elgamal"
)

const vectorFile = "../../../testdata/metal/dataoram-vectors.json"

// Pins docs/formats/metal-dataoram.md: the SS-DOT message for fixed keys, order and blocks,
// and the three decryption messages for keys and blinding scalars drawn from ChaCha8 with a
// fixed seed (x1, x2, the encryption's r, then t).
type dataVectors struct {
	DOTKeys    string   `json:"dot_keys"`
	DOTOrder   []int    `json:"dot_order"`
	DOTBlocks  []string `json:"dot_blocks"`
	DOTMessage string   `json:"dot_message"`
	Seed       string   `json:"decrypt_seed"`
	Chunk      string   `json:"chunk"`
	Ciphertext string   `json:"ciphertext"`
	ToServer1  string   `json:"blinded_r"`
	FromS1     string   `json:"server1_share"`
	FromS2     string   `json:"server2_share"`
}

func TestVectors(t *testing.T) {
	var v dataVectors
	keys := make([]byte, 48)
	for i := range keys {
		keys[i] = byte(i)
	}
	blocks := [][]byte{[]byte("block zero......"), []byte("block one.......")}
	blocks = append(blocks, []byte("block two......."))
	v.DOTKeys, v.DOTOrder = hex.EncodeToString(keys), []int{2, 0, 1}
	for _, b := range blocks {
		v.DOTBlocks = append(v.DOTBlocks, hex.EncodeToString(b))
	}
	msg, err := dotMessage(keys, v.DOTOrder, blocks)
	if err != nil {
		t.Fatal(err)
	}
	v.DOTMessage = hex.EncodeToString(msg)
	// Independently: pair k opens with key order[k] under the documented nonces.
	for k, j := range v.DOTOrder {
		aead, _ := gcm(keys[16*j : 16*j+16])
		p := msg[8+k*64 : 8+(k+1)*64]
		z, err1 := aead.Open(nil, make([]byte, 12), p[:32], nil)
		c, err2 := aead.Open(nil, append(make([]byte, 11), 1), p[32:], nil)
		if err1 != nil || err2 != nil || !bytes.Equal(z, make([]byte, 16)) || !bytes.Equal(c, blocks[j]) {
			t.Fatalf("pair %d does not open with key %d", k, j)
		}
	}

	seed := [32]byte{9}
	rnd := mrand.NewChaCha8(seed)
	k1, _ := elgamal.NewKeyShare(rnd)
	k2, _ := elgamal.NewKeyShare(rnd)
	pk := elgamal.JoinPublic(&k1.X, &k2.X)
	var chunk [elgamal.ChunkLen]byte
	copy(chunk[:], "veil metal chunk")
	ct, _ := pk.Encrypt(&chunk, rnd)
	toS1, toClient, err := DecryptServer2(k2, &k1.X, []elgamal.Ciphertext{ct}, rnd)
	if err != nil {
		t.Fatal(err)
	}
	fromS1, err := DecryptServer1(k1, toS1)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := DecryptClient(fromS1, toClient); err != nil || !bytes.Equal(out, chunk[:]) {
		t.Fatalf("vector does not decrypt: %v", err)
	}
	v.Seed, v.Chunk, v.Ciphertext = hex.EncodeToString(seed[:]), hex.EncodeToString(chunk[:]), hex.EncodeToString(ct.Marshal())
	v.ToServer1, v.FromS1, v.FromS2 = hex.EncodeToString(toS1), hex.EncodeToString(fromS1), hex.EncodeToString(toClient)

	testutil.Golden(t, vectorFile, v)
}
