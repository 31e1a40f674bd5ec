package oblivisync

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// Issue 17 item 4: status showed the numbers a writer last published (after its last
// epoch), so a stopped writer whose journal held an unsynced file showed 0 pending. It now
// reads the journal itself, without changing it, and says when the state is behind.
func TestStatusReadsTheJournal(t *testing.T) {
	dir, state := newBackend(t, 16, 16<<10, 3), t.TempDir()
	w := openW(t, dir, state)
	a := must(w.Create(rootIno, "a", 0o644, 0, 0))
	must(w.Write(a.Ino, 0, bytes.Repeat([]byte{1}, 20<<10)))
	must(w.Sync())
	b := must(w.Create(rootIno, "b", 0o644, 0, 0))
	must(w.Write(b.Ino, 0, bytes.Repeat([]byte{2}, 30<<10)))
	want := w.Stats()
	w.Close()
	before := observe(t, state)
	st, err := Status(dir, testPass, state, "")
	if err != nil || st.Writer == nil || st.Writer.Source != "journal" || st.Writer.Running {
		t.Fatalf("status: %+v %v", st.Writer, err)
	}
	if st.Writer.PendingInodes != want.PendingInodes || st.Writer.PendingBytes != want.PendingBytes || want.PendingBytes < 30<<10 {
		t.Fatalf("status from the journal: %+v, the writer had %+v", st.Writer, want)
	}
	if after := observe(t, state); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("status changed the state directory:\n%v\n%v", before, after)
	}
	w = openW(t, dir, state) // a running writer: its published numbers
	rs, err := Status(dir, testPass, state, "")
	if err != nil || !rs.Writer.Running || rs.Writer.Source != "status.json" || rs.Writer.PendingInodes != want.PendingInodes {
		t.Fatalf("status of a running writer: %+v %v", rs.Writer, err)
	}
	drain(t, w, 100)
	w.Close()
	other := openW(t, dir, t.TempDir())
	must(other.Sync())
	other.Close()
	st, err = Status(dir, testPass, state, "")
	if err != nil || !strings.Contains(st.Writer.Behind, "veil osync adopt") {
		t.Fatalf("status of a state behind the backend: %+v %v", st.Writer, err)
	}
}
