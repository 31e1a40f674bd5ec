package dupless

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// Every name field X of the JSON scripts read gets X_bytes, the exact bytes in standard
// base64, when the name is not valid UTF-8 (encoding/json writes U+FFFD for such bytes),
// and no X_bytes when it is valid.
func TestJSONNamesNotUTF8(t *testing.T) {
	bad, good := "d/caf\xe9\xff.txt", "d/café.txt"
	for _, tc := range []struct {
		v      func(name string) any
		fields []string
	}{
		{func(n string) any { return Entry{Path: n, Symlink: n} }, []string{"path", "symlink"}},
		{func(n string) any { return FileError{Path: n, Err: "x"} }, []string{"path"}},
		{func(n string) any { return Change{Path: n, Kind: "added"} }, []string{"path"}},
		{func(n string) any { return Change{Path: n, From: n, Kind: "moved"} }, []string{"path", "from"}},
		{func(n string) any { return Planned{Local: n, Dest: n, Type: "file"} }, []string{"local", "dest"}},
		{func(n string) any { return Version{N: 1, Symlink: n} }, []string{"symlink"}},
		{func(n string) any { return &Summary{Errors: []FileError{{Path: n, Err: "x"}}} }, nil},
	} {
		for _, name := range []string{bad, good} {
			b, err := json.Marshal(tc.v(name))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			fields := tc.fields
			if fields == nil { // a summary: its errors carry the names
				m, fields = m["errors"].([]any)[0].(map[string]any), []string{"path"}
			}
			for _, f := range fields {
				raw, has := m[f+"_bytes"]
				if name == good {
					if has || m[f] != good {
						t.Errorf("%s: %s", b, f)
					}
					continue
				}
				s, _ := raw.(string)
				got, err := base64.StdEncoding.DecodeString(s)
				if err != nil || string(got) != bad || m[f] != "d/caf\ufffd\ufffd.txt" {
					t.Errorf("%s: %s_bytes %q (%v)", b, f, got, err)
				}
			}
		}
	}
}
