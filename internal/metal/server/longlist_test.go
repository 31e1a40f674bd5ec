package server

import (
	"context"
	"crypto/rand"
	"io"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/share"
)

// TestSlowListDownloadNotCut: a broadcast-list download read slowly but steadily gets the
// whole list, however much longer than the call timeout it takes; one whose client stops
// reading is cut once it took nothing for the stall timeout. The reply had one deadline,
// the call timeout (5 minutes): a long list read at a modest rate was cut, and the
// receive failed every time. Here the call timeout is 2 s, the stall timeout 1 s, the
// list 15 MB (more than the sockets' buffers hold), read 128 KiB every 60 ms (~7 s;
// the server is still writing after 4 s).
func TestSlowListDownloadNotCut(t *testing.T) {
	const n = 160_000
	p := startPairParams(t, 0, 2*time.Second, testParams, func(c *Config) {
		c.CallTimeout, c.StallTimeout = 2*time.Second, time.Second
	})
	c := p.client(t)
	a, err := c.CreateAccount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	entries := make([][]byte, n)
	for i := range entries {
		entries[i] = make([]byte, share.EntryLen)
		rand.Read(entries[i])
	}
	if err := p.srv[0].AppendShareEntries(entries); err != nil {
		t.Fatal(err)
	}
	want := int64(share.ListHeaderLen + n*share.EntryLen)
	// read reads the reply 128 KiB at a time, pausing pause after each piece and stall
	// once after the first 1 MiB; it returns the bytes read.
	read := func(pause, stall time.Duration) (int64, error) {
		resp, st2 := listPost(t, p, a.Capability, "0")
		if resp.StatusCode != 200 || st2 != 200 {
			t.Fatalf("download: %s, server 2 %d", resp.Status, st2)
		}
		defer resp.Body.Close()
		var got int64
		for {
			k, err := io.CopyN(io.Discard, resp.Body, 128<<10)
			got += k
			if err == io.EOF {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			if got == 1<<20 {
				time.Sleep(stall)
			}
			time.Sleep(pause)
		}
	}
	start := time.Now()
	got, err := read(60*time.Millisecond, 0)
	t.Logf("slow download: %d of %d bytes in %v: %v", got, want, time.Since(start), err)
	if got != want || err != nil || time.Since(start) < 4*time.Second {
		t.Fatalf("a download read slowly but steadily: %d of %d bytes in %v: %v", got, want, time.Since(start), err)
	}
	start = time.Now()
	got, err = read(0, 4*time.Second)
	t.Logf("stalled download: %d of %d bytes in %v: %v", got, want, time.Since(start), err)
	if got >= want {
		t.Fatalf("a download whose client stopped reading for 4 s (stall timeout 1 s) was not cut: %d bytes", got)
	}
}
