package client

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ReadPairs reads pairs for bulk publication: one per line, KEY<TAB>VALUE (a line with no
// tab is a key with an empty value); empty lines and lines starting with '#' are skipped.
// acl applies to every pair. A bad line fails the whole read, naming the line.
func ReadPairs(r io.Reader, acl []string) ([]Pair, error) {
	var out []Pair
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "\t")
		p := Pair{Key: k, Value: []byte(v), ACL: acl}
		if err := p.Check(); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading pairs: %w", err)
	}
	return out, nil
}
