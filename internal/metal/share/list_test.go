package share

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func openList(t *testing.T, path string) (*List, *bbolt.DB) {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenList(db)
	if err != nil {
		t.Fatal(err)
	}
	return l, db
}

func entry(i int) []byte {
	e := bytes.Repeat([]byte{byte(i)}, EntryLen)
	copy(e, fmt.Sprintf("entry %04d", i))
	return e
}

func since(t *testing.T, l *List, from uint64) ListReply {
	b, err := l.Since(from)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseListReply(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestListEpochs: entries wait in the open epoch until a download closes it (epoch 0), are
// served once per cursor, survive a reopen of the file, come out shuffled (not always in
// sending order over 30 epochs of 8, each epoch the same set), and expire after the
// retention.
func TestListEpochs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	l, db := openList(t, path)
	now := time.Unix(1000, 0)
	l.Now = func() time.Time { return now }
	if r := since(t, l, 0); len(r.Entries) != 0 || r.Next != 0 {
		t.Fatalf("empty list: %+v", r)
	}
	shuffled := false
	for ep := 0; ep < 30; ep++ {
		var want [][]byte
		for i := 0; i < 8; i++ {
			e := entry(8*ep + i)
			want = append(want, e)
			if err := l.Append(e); err != nil {
				t.Fatal(err)
			}
		}
		r := since(t, l, uint64(ep))
		if r.First != uint64(ep) || r.Next != uint64(ep+1) || len(r.Entries) != 8 {
			t.Fatalf("epoch %d: first %d next %d, %d entries", ep, r.First, r.Next, len(r.Entries))
		}
		got := append([][]byte(nil), r.Entries...)
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				shuffled = true
			}
		}
		sort.Slice(got, func(i, j int) bool { return bytes.Compare(got[i], got[j]) < 0 })
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("epoch %d: entries changed by the shuffle", ep)
			}
		}
	}
	if !shuffled {
		t.Fatal("30 epochs all served in sending order: no shuffle")
	}
	db.Close()
	l, db = openList(t, path)
	defer db.Close()
	l.Now = func() time.Time { return now }
	if r := since(t, l, 0); len(r.Entries) != 240 || r.Next != 30 {
		t.Fatalf("after reopen: %d entries, next %d", len(r.Entries), r.Next)
	}
	// A longer epoch: entries are held until it has run.
	l.Epoch = time.Hour
	l.Append(entry(1000))
	if r := since(t, l, 30); len(r.Entries) != 0 || r.Next != 30 {
		t.Fatal("an entry was served before its epoch closed")
	}
	now = now.Add(time.Hour)
	if r := since(t, l, 30); len(r.Entries) != 1 || r.Next != 31 {
		t.Fatal("the epoch did not close after its length")
	}
	// Retention: everything closed at t=1000s expires 72 h later.
	now = time.Unix(1000, 0).Add(72*time.Hour + time.Second)
	if r := since(t, l, 0); r.First != 30 || len(r.Entries) != 1 {
		t.Fatalf("after retention: first %d, %d entries", r.First, len(r.Entries))
	}
	if err := l.Append(make([]byte, 10)); err == nil {
		t.Fatal("a short entry appended")
	}
}

func TestParseListReplyRejects(t *testing.T) {
	good := EncodeListReply(1, 2, append(entry(1), entry(2)...))
	if r, err := ParseListReply(good); err != nil || len(r.Entries) != 2 {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"short":        good[:10],
		"version":      append([]byte{2}, good[1:]...),
		"truncated":    good[:len(good)-1],
		"extra":        append(append([]byte{}, good...), 0),
		"first > next": EncodeListReply(3, 2, nil),
	}
	for name, b := range bad {
		if _, err := ParseListReply(b); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// cutWriter runs then before its first write goes through.
type cutWriter struct {
	bytes.Buffer
	then func()
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.then != nil {
		w.then()
		w.then = nil
	}
	return w.Buffer.Write(p)
}

// A download larger than one piece (each copied in a read transaction of its own) is the
// list, across epochs; an epoch that expires once the header is written cuts the reply,
// which the client refuses (it is never a shorter list that looks whole).
func TestListDownloadInPieces(t *testing.T) {
	l, db := openList(t, filepath.Join(t.TempDir(), "l.db"))
	defer db.Close()
	now := time.Unix(1000, 0)
	l.Now = func() time.Time { return now }
	const per = 2*listPiece/EntryLen + 7 // each epoch spans three pieces
	for ep := range 2 {
		var es [][]byte
		for i := range per {
			es = append(es, entry(ep*per+i))
		}
		if err := l.AppendAll(es); err != nil {
			t.Fatal(err)
		}
		if err := l.Prepare(); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	r := since(t, l, 0)
	if r.First != 0 || r.Next != 2 || len(r.Entries) != 2*per {
		t.Fatalf("download: first %d next %d, %d entries, want %d", r.First, r.Next, len(r.Entries), 2*per)
	}
	seen := map[string]bool{}
	for _, e := range r.Entries {
		seen[string(e)] = true
	}
	for i := range 2 * per {
		if !seen[string(entry(i))] {
			t.Fatalf("entry %d missing from the download", i)
		}
	}
	l.Retention = 90 * time.Minute // epoch 0 (closed at 1000 s) expires at the next Prepare
	w := &cutWriter{then: func() {
		if err := l.Prepare(); err != nil {
			t.Error(err)
		}
	}}
	if err := l.WriteSince(w, 0); err == nil {
		t.Fatal("a download whose first epoch expired meanwhile ended without an error")
	}
	if _, _, err := ReadListReply(&w.Buffer, func([]byte) error { return nil }); err == nil {
		t.Fatal("a download cut by an expiry reads as a whole list")
	}
}
