package client

import (
	"strings"
	"testing"
)

func TestReadPairs(t *testing.T) {
	ps, err := ReadPairs(strings.NewReader("# comment\na.txt\thost:/a\r\n\nb.txt\n"), []string{"bob"})
	if err != nil || len(ps) != 2 || ps[0].Key != "a.txt" || string(ps[0].Value) != "host:/a" || ps[1].Key != "b.txt" || ps[1].ACL[0] != "bob" {
		t.Fatalf("%+v %v", ps, err)
	}
	if _, err := ReadPairs(strings.NewReader("ok\tv\n\tno key\n"), nil); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := ReadPairs(strings.NewReader("k\t"+strings.Repeat("v", 1025)+"\n"), nil); err == nil {
		t.Fatal("oversized value accepted")
	}
}

// FuzzReadPairs: every accepted pair passes Check; nothing panics.
func FuzzReadPairs(f *testing.F) {
	f.Add([]byte("a\tb\n# c\n\nd\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := ReadPairs(strings.NewReader(string(b)), nil)
		if err != nil {
			return
		}
		for i := range ps {
			if err := ps[i].Check(); err != nil {
				t.Fatalf("accepted a bad pair: %v", err)
			}
		}
	})
}
