package access

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/twopc"
	"github.com/veil-project/veil/internal/testutil"
)

const vectorFile = "../../../testdata/metal/access-vectors.json"

// Pins docs/formats/metal-access.md: the parameters, a fresh Server 1 state (randomness
// from ChaCha8 with seed 1..), the two request parts of a write of "hello" to file 5 (seed
// 2..) and a reply, all for testParams.
type accessVectors struct {
	Params   string `json:"params"`
	State    string `json:"state"`
	ToServer string `json:"request_server1"`
	ToOther  string `json:"request_server2"`
	Reply    string `json:"reply"`
	NodeKey  string `json:"tree_node_key"` // T_1's stash, its share drawn from seed 4
	Node     string `json:"tree_node"`
}

func seeded(b byte) *mrand.ChaCha8 {
	var s [32]byte
	s[0] = b
	return mrand.NewChaCha8(s)
}

func TestVectors(t *testing.T) {
	st, err := NewState(twopc.Garbler, testParams, seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	st.PeerX = st.Key.X
	pk := elgamal.JoinPublic(&st.Key.X, &st.PeerX)
	capability := bytes.Repeat([]byte{0xca}, ac.CapabilityLen)
	to1, to2, err := NewRequest(testParams, pk, capability, 5, ac.Write, []byte("hello"), seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	v := accessVectors{
		Params: hex.EncodeToString(testParams.Encode()), State: hex.EncodeToString(st.Marshal()),
		ToServer: hex.EncodeToString(to1), ToOther: hex.EncodeToString(to2),
		Reply: hex.EncodeToString(Reply{Allowed: true, Data: bytes.Repeat([]byte{7}, 64)}.Marshal()),
	}
	stash := st.TreeShare(1).Node(0)
	r := mrand.New(seeded(4))
	for i := range stash {
		stash[i] = r.IntN(2) == 1
	}
	v.NodeKey, v.Node = hex.EncodeToString(nodeKey(1, 0)), hex.EncodeToString(st.EncodeNode(1, 0))
	if err := st.DecodeNode(1, 0, st.EncodeNode(1, 0)); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, vectorFile, v)
	back, err := UnmarshalState(st.Marshal())
	if err != nil || !bytes.Equal(back.Marshal(), st.Marshal()) {
		t.Fatalf("state round trip: %v", err)
	}
	req1, user, err := SplitServer1Request(testParams, to1)
	if err != nil || CheckUserBlock(testParams, user) != nil {
		t.Fatalf("server 1 part: %v", err)
	}
	c := make([]byte, ac.RequestLen)
	for i := range c {
		c[i] = req1[i] ^ to2[i]
	}
	if !bytes.Equal(c[:ac.CapabilityLen], capability) || c[ac.CapabilityLen] != 5 || c[ac.RequestLen-1] != byte(ac.Write) {
		t.Fatalf("the shares do not combine to the request: %x", c)
	}
}

// States written by earlier veils (version 1: the non-recursive position map; version 2:
// the trees' shares inside the state; real ones, testdata/metal/access-state-v*.hex) are
// refused with a one-line error naming both versions, as are version-1 parameters.
func TestOldStateRefused(t *testing.T) {
	for _, v := range []int{1, 2} {
		b, err := os.ReadFile(fmt.Sprintf("../../../testdata/metal/access-state-v%d.hex", v))
		if err != nil {
			t.Fatal(err)
		}
		old, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = UnmarshalState(old)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("version %d,", v)) || !strings.Contains(err.Error(), "version 3") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("version-%d state: %v", v, err)
		}
		if v == 1 {
			if _, err := DecodeParams(old[2 : 2+ParamsLen]); err == nil {
				t.Fatal("version-1 parameters accepted")
			}
		}
	}
}

func FuzzUnmarshalState(f *testing.F) {
	st, _ := NewState(twopc.Evaluator, testParams, seeded(3))
	f.Add(st.Marshal())
	f.Add(testParams.Encode())
	f.Add(append(nodeKey(1, 0), st.EncodeNode(1, 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := UnmarshalState(b); err == nil && !bytes.Equal(s.Marshal(), b) {
			t.Fatalf("accepted a non-canonical state")
		}
		_, _ = DecodeParams(b)
		// A stored tree node (key then value, as in bucket metal-trees).
		if len(b) >= 9 {
			i, n := int(b[0]), binary.BigEndian.Uint64(b[1:9])
			if st.DecodeNode(i, n, b[9:]) == nil && !bytes.Equal(st.EncodeNode(i, n), b[9:]) {
				t.Fatalf("accepted a non-canonical node")
			}
		}
	})
}

func FuzzFinish(f *testing.F) {
	n := 1 + testParams.Chunks()*elgamal.PointLen
	f.Add(make([]byte, n), make([]byte, n))
	f.Add([]byte{1}, []byte{0})
	f.Fuzz(func(t *testing.T, r1, r2 []byte) {
		if d, err := Finish(testParams, r1, r2); err == nil && len(d) != testParams.BlockSize {
			t.Fatalf("decrypted %d bytes", len(d))
		}
		_, _, _ = SplitServer1Request(testParams, r1)
		_ = CheckUserBlock(testParams, r2)
	})
}

func FuzzParseDeployment(f *testing.F) {
	f.Add([]byte(`{"version":1,"server1":"https://a:1","ca1":"x","server2":"https://b:2","ca2":"y"}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := ParseDeployment(b); err == nil && (d.Version != 1 || d.CA1 == "" || d.CA2 == "") {
			t.Fatalf("accepted %+v", d)
		}
	})
}
