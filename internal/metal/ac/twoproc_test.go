package ac

import (
	"bufio"
	"crypto/aes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Server 2 runs in a child process (this test binary re-executed): it dials server 1 over
// loopback TCP for the 2PC link and takes its request shares on stdin, one per line:
//
//	create        -> "cap <hex share>"
//	check <hex>   -> "allowed <0|1>"
//
// At start it prints "key <hex>" (its key share) so that the test, as an omniscient
// observer, can check granted capabilities with a library EAX.
const childEnv = "VEIL_METAL_AC_SERVER2"

func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		if err := server2(addr); err != nil {
			fmt.Fprintln(os.Stderr, "server2:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func server2(addr string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	sess, err := twopc.NewSession(conn, twopc.Evaluator, rand.Reader)
	if err != nil {
		return err
	}
	st, err := NewState(rand.Reader)
	if err != nil {
		return err
	}
	p, err := NewParty(sess, st, 10, rand.Reader)
	if err != nil {
		return err
	}
	fmt.Printf("key %x\n", st.KeyShare)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 1 && f[0] == "create":
			c, err := p.CreateAccount()
			if err != nil {
				return err
			}
			fmt.Printf("cap %x\n", c)
		case len(f) == 2 && f[0] == "check":
			share, err := hex.DecodeString(f[1])
			if err != nil {
				return err
			}
			ok, err := p.Check(share)
			if err != nil {
				return err
			}
			fmt.Printf("allowed %d\n", map[bool]int{false: 0, true: 1}[ok])
		default:
			return fmt.Errorf("bad command %q", in.Text())
		}
	}
	return in.Err()
}

type twoServers struct {
	t     *testing.T
	p1    *Party
	in    *bufio.Writer
	out   *bufio.Scanner
	key2  []byte
	child *exec.Cmd
}

func startServers(t *testing.T) *twoServers {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+ln.Addr().String())
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("server 2 process: %v", err)
		}
	})
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	sess, err := twopc.NewSession(conn, twopc.Garbler, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := NewState(rand.Reader)
	p1, err := NewParty(sess, st, 10, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &twoServers{t: t, p1: p1, in: bufio.NewWriter(stdin), out: bufio.NewScanner(stdout), child: cmd}
	s.key2 = s.hexLine("key")
	return s
}

func (s *twoServers) hexLine(prefix string) []byte {
	if !s.out.Scan() {
		s.t.Fatalf("server 2 closed its output: %v", s.out.Err())
	}
	f := strings.Fields(s.out.Text())
	if len(f) != 2 || f[0] != prefix {
		s.t.Fatalf("server 2 said %q, want %s", s.out.Text(), prefix)
	}
	p, err := hex.DecodeString(f[1])
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

func (s *twoServers) send(line string) {
	fmt.Fprintln(s.in, line)
	if err := s.in.Flush(); err != nil {
		s.t.Fatal(err)
	}
}

// createAccount plays the client: asks both servers, combines the capability shares.
func (s *twoServers) createAccount() [CapabilityLen]byte {
	s.send("create")
	c1, err := s.p1.CreateAccount()
	if err != nil {
		s.t.Fatal(err)
	}
	c, err := Combine(c1, s.hexLine("cap"))
	if err != nil {
		s.t.Fatal(err)
	}
	var out [CapabilityLen]byte
	copy(out[:], c)
	return out
}

func (s *twoServers) check(r Request) bool {
	s1, s2, err := r.Split(rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	s.send("check " + hex.EncodeToString(s2))
	a1, err := s.p1.Check(s1)
	if err != nil {
		s.t.Fatal(err)
	}
	if !s.out.Scan() {
		s.t.Fatalf("server 2 closed its output: %v", s.out.Err())
	}
	var a2 bool
	switch s.out.Text() {
	case "allowed 0":
	case "allowed 1":
		a2 = true
	default:
		s.t.Fatalf("server 2 said %q", s.out.Text())
	}
	return a1 != a2
}

func (s *twoServers) openWithLibrary(key1 [16]byte, c [CapabilityLen]byte) (Description, error) {
	key := make([]byte, 16)
	for i := range key {
		key[i] = key1[i] ^ s.key2[i]
	}
	blk, _ := aes.NewCipher(key)
	aead, _ := eax.NewEAX(blk)
	plain, err := aead.Open(nil, c[:16], c[16:], nil)
	if err != nil {
		return Description{}, err
	}
	return DecodeDescription(plain)
}

// Metal-AC end to end between two server processes over loopback TCP: capabilities granted
// inside 2PC are real EAX under K1 XOR K2 with consecutive file ranges; the check inside
// 2PC admits exactly what they grant and refuses forged, altered and foreign capabilities.
func TestMetalACTwoProcesses(t *testing.T) {
	s := startServers(t)
	alice, bob := s.createAccount(), s.createAccount()
	for i, c := range [][CapabilityLen]byte{alice, bob} {
		d, err := s.openWithLibrary(s.p1.State().KeyShare, c)
		if err != nil {
			t.Fatalf("capability %d does not open with EAX under K1^K2: %v", i, err)
		}
		if want := (Description{Perm: Read | Write | Share, First: uint64(10 * i), Count: 10}); d != want {
			t.Fatalf("capability %d grants %+v, want %+v", i, d, want)
		}
	}
	flip := func(c [CapabilityLen]byte, i int) [CapabilityLen]byte { c[i] ^= 1; return c }
	var forged [CapabilityLen]byte
	rand.Read(forged[:])
	cases := []struct {
		name string
		r    Request
		want bool
	}{
		{"alice reads her file 3", Request{alice, 3, Read}, true},
		{"alice writes her file 9", Request{alice, 9, Write}, true},
		{"alice reads bob's file 10", Request{alice, 10, Read}, false},
		{"bob reads his file 10", Request{bob, 10, Read}, true},
		{"bob writes alice's file 0", Request{bob, 0, Write}, false},
		{"forged capability", Request{forged, 3, Read}, false},
		{"altered ciphertext", Request{flip(alice, 17), 3, Read}, false},
		{"altered tag", Request{flip(alice, 47), 3, Read}, false},
		{"altered nonce", Request{flip(alice, 0), 3, Read}, false},
		{"alice again, fresh shares", Request{alice, 3, Read}, true},
	}
	for _, tc := range cases {
		if got := s.check(tc.r); got != tc.want {
			t.Errorf("%s: allowed=%v, want %v", tc.name, got, tc.want)
		}
	}
}
