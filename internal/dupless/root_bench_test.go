package dupless

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
)

// benchRoot is a root of n records with names like a put's (encrypted, base64) and random
// record hashes, as the bench's namespace holds after n lone puts.
func benchRoot(n int) *treeRoot {
	r := &treeRoot{Seq: 9, Entries: map[string][32]byte{}}
	for i := 0; i < n; i++ {
		name := make([]byte, 24)
		rand.Read(name)
		var h [32]byte
		rand.Read(h[:])
		r.Entries["ENCDIRENCDIRENCDIRENCDIRENCDIRENCDIR/"+base64.RawURLEncoding.EncodeToString(name)+keySuffix] = h
	}
	return r
}

// BenchmarkSealRoot: sealing (compress + encrypt) a root of n records, which a lone put
// does once for its next root; it reports the sealed size.
func BenchmarkSealRoot(b *testing.B) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	for _, n := range []int{300, 1000} {
		r := benchRoot(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var size int
			for i := 0; i < b.N; i++ {
				size = len(k.sealRoot(r))
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
