package server

import (
	"context"
	"crypto/rand"
	"io"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/share"
)

// A download whose client reads slowly (here: not at all) holds up no call. Found by
// review: Server 1 wrote the whole reply inside one bbolt read transaction, which holds
// the database's mmap lock; a write that grows the file (the list, the state's
// copy-on-write pages, which the open read transaction keeps from being reused) waits
// for that lock, and every write after it for the writer lock: any account holder
// reading the list slowly stalled every call for up to the write deadline (5 min).
func TestSlowListDownloadHoldsUpNobody(t *testing.T) {
	const n = 160_000 // 15 MB: more than the sockets' buffers hold
	p := startPair(t)
	c := p.client(t)
	ctx := context.Background()
	a, err := c.CreateAccount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fill := func() [][]byte {
		f := make([][]byte, n)
		for i := range f {
			f[i] = make([]byte, share.EntryLen)
			rand.Read(f[i])
		}
		return f
	}
	if err := p.srv[0].AppendShareEntries(fill()); err != nil {
		t.Fatal(err)
	}
	resp, _ := listPost(t, p, a.Capability, "0") // closes the epoch; read in full
	if k, err := io.Copy(io.Discard, resp.Body); err != nil || k != share.ListHeaderLen+n*share.EntryLen {
		t.Fatalf("first download: %d bytes, %v", k, err)
	}
	slow, _ := listPost(t, p, a.Capability, "0") // never read: Server 1's writes block
	defer slow.Body.Close()
	time.Sleep(500 * time.Millisecond)
	// Sends append entries over time; four times the list at once makes the file grow
	// past its mapping now rather than after thousands of calls.
	appended := make(chan error, 1)
	more := append(append(append(fill(), fill()...), fill()...), fill()...)
	go func() { appended <- p.srv[0].AppendShareEntries(more) }()
	time.Sleep(500 * time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.CreateAccount(cctx); err != nil {
		t.Fatalf("an account created while a download is read slowly: %v after %v", err, time.Since(start).Round(time.Millisecond))
	}
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("entries appended while a download is read slowly: still waiting after 20 s")
	}
}
