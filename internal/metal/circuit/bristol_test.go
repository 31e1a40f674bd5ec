package circuit

import (
	"strings"
	"testing"
)

const tinyBristol = "3 7\n2 2 2\n1 1\n\n2 1 0 2 4 AND\n1 1 1 5 INV\n2 1 4 5 6 XOR\n"

func TestParseBristol(t *testing.T) {
	br, err := ParseBristol(strings.NewReader(tinyBristol))
	if err != nil {
		t.Fatal(err)
	}
	b := NewBuilder()
	x, y := b.Input(1, 2), b.Input(2, 2)
	b.Output(Public, b.Include(br, x, y)[0]...)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for v := 0; v < 16; v++ {
		x0, x1, y0 := v&1 == 1, v&2 == 2, v&4 == 4
		out, _ := c.Eval([]bool{x0, x1}, []bool{y0, v&8 == 8})
		if want := (x0 && y0) != !x1; out[0] != want {
			t.Fatalf("v=%d: got %v", v, out[0])
		}
	}
}

func TestParseBristolRejects(t *testing.T) {
	for name, src := range map[string]string{
		"empty":          "",
		"header":         "x y\n",
		"undefined read": "1 4\n1 2\n1 1\n2 1 0 2 3 AND\n",
		"double def":     "2 4\n1 2\n1 1\n2 1 0 1 2 AND\n2 1 0 1 2 XOR\n",
		"unknown gate":   "1 4\n1 3\n1 1\n2 1 0 1 3 OR\n",
		"short":          "2 4\n1 3\n1 1\n2 1 0 1 3 AND\n",
		"trailing":       "1 4\n1 3\n1 1\n2 1 0 1 3 AND\n1 1 0 3 INV\n",
		"huge":           "1 999999999999\n1 3\n1 1\n",
		"output undef":   "1 5\n1 3\n1 1\n2 1 0 1 3 AND\n",
	} {
		if _, err := ParseBristol(strings.NewReader(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzParseBristol(f *testing.F) {
	f.Add([]byte(tinyBristol))
	f.Add([]byte("1 4\n1 3\n1 1\n2 1 0 1 3 AND\n"))
	f.Add([]byte("2 4\n1 2\n1 1\n2 1 0 1 2 AND\n2 1 0 1 2 XOR\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br, err := ParseBristol(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		b := NewBuilder()
		var ins []Word
		for _, n := range br.Inputs {
			ins = append(ins, b.Input(1, n))
		}
		for _, w := range b.Include(br, ins...) {
			b.Output(Public, w...)
		}
		c, err := b.Build()
		if err != nil {
			t.Fatalf("parsed circuit does not build: %v", err)
		}
		if _, err := c.Eval(make([]bool, c.In1), nil); err != nil {
			t.Fatal(err)
		}
	})
}
