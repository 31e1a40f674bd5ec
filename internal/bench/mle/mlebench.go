package mlebench

import (
	"bufio"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/zeebo/blake3"
)

// Sizes are the message sizes measured: the paper's 4 KB, and 1 MiB.
var Sizes = []int{4 << 10, 1 << 20}

// Case is one benchmark.
type Case struct {
	Group string // "MLE" or "Primitive"
	Name  string // scheme or primitive name
	Size  int
	Fn    func(b *testing.B)
}

// FullName is the sub-benchmark path, e.g. "HCE2/4KiB".
func (c Case) FullName() string { return c.Name + "/" + SizeName(c.Size) }

// SizeName prints 4096 as 4KiB and 1048576 as 1MiB.
func SizeName(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func message(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>8)
	}
	return b
}

// Cases returns every MLE case (KeyGen + Enc + TagGen of a message, the paper's measure)
// for the given suite, then the primitives.
func Cases(suite mle.Suite) []Case {
	var cs []Case
	for _, sc := range mle.Schemes {
		for _, n := range Sizes {
			m := &mle.MLE{Suite: suite, Scheme: sc}
			cs = append(cs, Case{"MLE", sc.String(), n, func(b *testing.B) {
				msg := message(n)
				buf := make([]byte, 0, n+sc.Overhead())
				ctx := context.Background()
				b.SetBytes(int64(n))
				for b.Loop() {
					var err error
					if buf, _, err = m.AppendEncrypt(ctx, buf[:0], mle.LocalKeys{}, msg); err != nil {
						b.Fatal(err)
					}
				}
			}})
		}
	}
	for _, n := range Sizes {
		cs = append(cs,
			Case{"Primitive", "SHA256", n, hashCase(n, func(p []byte) { sha256.Sum256(p) })},
			Case{"Primitive", "BLAKE3", n, hashCase(n, func(p []byte) { blake3.Sum256(p) })},
			Case{"Primitive", "AESCTR", n, func(b *testing.B) {
				msg, out := message(n), make([]byte, n)
				var key [32]byte
				iv := make([]byte, aes.BlockSize)
				b.SetBytes(int64(n))
				for b.Loop() {
					blk, _ := aes.NewCipher(key[:])
					cipher.NewCTR(blk, iv).XORKeyStream(out, msg)
				}
			}})
	}
	return cs
}

func hashCase(n int, f func([]byte)) func(b *testing.B) {
	return func(b *testing.B) {
		msg := message(n)
		b.SetBytes(int64(n))
		for b.Loop() {
			f(msg)
		}
	}
}

// Result is one measured case.
type Result struct {
	Group         string  `json:"group"`
	Name          string  `json:"name"`
	Suite         string  `json:"suite,omitempty"`
	Size          int     `json:"size"`
	MBPerS        float64 `json:"mb_per_s"`
	CyclesPerByte float64 `json:"cycles_per_byte"`
	NsPerOp       float64 `json:"ns_per_op"`
}

// Measure runs a case with testing.Benchmark and converts it at the given clock (GHz).
func Measure(c Case, ghz float64) Result {
	r := testing.Benchmark(c.Fn)
	ns := float64(r.T.Nanoseconds()) / float64(r.N)
	bps := float64(c.Size) / ns * 1e9
	return Result{Group: c.Group, Name: c.Name, Size: c.Size, MBPerS: bps / 1e6,
		CyclesPerByte: ghz * 1e9 / bps, NsPerOp: ns}
}

// NominalGHz reads the CPU's nominal clock from /proc/cpuinfo: the "@ x.xxGHz" of the model
// name if present, else "cpu MHz". It returns 0 if neither is found.
func NominalGHz() float64 {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	model := regexp.MustCompile(`^model name\s*:.*@\s*([0-9.]+)GHz`)
	mhz := regexp.MustCompile(`^cpu MHz\s*:\s*([0-9.]+)`)
	var fromMHz float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := model.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			return v
		}
		if m := mhz.FindStringSubmatch(sc.Text()); m != nil && fromMHz == 0 {
			v, _ := strconv.ParseFloat(m[1], 64)
			fromMHz = v / 1000
		}
	}
	return fromMHz
}
