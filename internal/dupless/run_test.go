package dupless

import (
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// The run's encFile, which remembers encrypted directories, gives exactly the Client's
// answer, for short and long (tagged) components, on a first and a second call.
func TestRunEncFileMatchesClient(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	run := newPutRun(c.be, &Summary{})
	long := strings.Repeat("d", 200) // a long name: stored under a tag
	paths := []string{"f", "a/f", "a/b/c/f", "a/b/c/g", "a/" + long + "/f", "a/" + long + "/" + long}
	for round := 0; round < 2; round++ {
		for _, p := range paths {
			wd, wn, werr := c.encFile(p)
			gd, gn, gerr := run.encFile(c, p)
			if gd != wd || gn != wn || (gerr == nil) != (werr == nil) {
				t.Fatalf("%s (round %d): run %q %q %v, client %q %q %v", p, round, gd, gn, gerr, wd, wn, werr)
			}
		}
	}
	if _, _, err := run.encFile(c, ""); err == nil {
		t.Fatal("an empty destination was accepted")
	}
	if !isLongTag(strings.Split(mustEnc(t, run, c, "a/"+long+"/f"), "/")[1]) {
		t.Fatal("the long directory name is not stored under a tag")
	}
}

func mustEnc(t *testing.T, run *putRun, c *Client, p string) string {
	t.Helper()
	d, _, err := run.encFile(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
