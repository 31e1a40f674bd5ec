package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/share"
)

// listPost sends a broadcast-list download's two parts (XOR shares of capability under
// one request id) and returns Server 1's reply, unread, and Server 2's status.
func listPost(t *testing.T, p *pair, capability []byte, from string) (*http.Response, int) {
	t.Helper()
	to1, to2, err := share.ListRequest(capability, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	rand.Read(id)
	st2 := make(chan int, 1)
	go func() {
		resp, err := httpClient(t, p.dep.CA2).Post("https://"+p.addr[1]+"/v1/share/list", "application/octet-stream", bytes.NewReader(append(id, to2...)))
		if err != nil {
			st2 <- 0
			return
		}
		resp.Body.Close()
		st2 <- resp.StatusCode
	}()
	resp, err := httpClient(t, p.dep.CA1).Post("https://"+p.addr[0]+"/v1/share/list?from="+from, "application/octet-stream", bytes.NewReader(append(id, to1...)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, <-st2
}

// oneLine checks an error reply: status, and one line of text containing want.
func oneLine(t *testing.T, what string, resp *http.Response, status int, want string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	msg := strings.TrimSuffix(string(b), "\n")
	if resp.StatusCode != status || strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Fatalf("%s: %s %q, want %d and one line with %q", what, resp.Status, msg, status, want)
	}
}

// TestShareListNeedsAccount: the broadcast list is for users (paper §6.2: the enrolled
// users download it; each holds an account capability). A download without a credential
// (the old GET, or a POST without shares) is refused with a one-line error before any
// 2PC; shares of something that is not an account capability are refused after the
// servers' check; an account capability's shares get the list, from both servers' check.
func TestShareListNeedsAccount(t *testing.T) {
	p := startPair(t)
	c := p.client(t)
	hc := httpClient(t, p.dep.CA1)
	resp, err := hc.Get("https://" + p.addr[0] + "/v1/share/list?from=0")
	if err != nil {
		t.Fatal(err)
	}
	oneLine(t, "GET without a credential", resp, http.StatusUnauthorized, "needs an account capability")
	resp.Body.Close()
	resp, err = hc.Post("https://"+p.addr[0]+"/v1/share/list?from=0", "application/octet-stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	oneLine(t, "POST without a credential", resp, http.StatusUnauthorized, "needs an account capability")
	resp.Body.Close()

	forged := make([]byte, 48)
	rand.Read(forged)
	resp, st2 := listPost(t, p, forged, "0")
	oneLine(t, "a forged capability", resp, http.StatusForbidden, "refused by the servers")
	if st2 != http.StatusForbidden {
		t.Fatalf("server 2 answered %d to a forged capability", st2)
	}

	a, err := c.CreateAccount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, st2 = listPost(t, p, a.Capability, "0")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || st2 != http.StatusOK {
		t.Fatalf("an account capability: %s %q, server 2 %d", resp.Status, b, st2)
	}
	if lr, err := share.ParseListReply(b); err != nil || len(lr.Entries) != 0 {
		t.Fatalf("empty list: %+v, %v", lr, err)
	}
	m := get(t, p.dep, 1, "https://"+p.addr[1]+"/metrics")
	if !strings.Contains(m, `veil_metal_calls_total{kind="share-list",result="ok"} 2`) {
		t.Fatalf("server 2 metrics:\n%s", m)
	}
}

// TestShareListStreams: Server 1 sends a long list as it reads it from its file, instead
// of building the reply in memory (it used to gather every entry, then copy them into the
// reply: about three times the list's size per download, for any client). A download of
// 160,000 entries (15 MB) allocates, in the whole process (both servers and this client),
// less than a quarter of the list's size.
func TestShareListStreams(t *testing.T) {
	const n = 160_000
	p := startPair(t)
	c := p.client(t)
	a, err := c.CreateAccount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fill := make([][]byte, n)
	for i := range fill {
		fill[i] = make([]byte, share.EntryLen)
		rand.Read(fill[i])
	}
	if err := p.srv[0].AppendShareEntries(fill); err != nil {
		t.Fatal(err)
	}
	fill = nil
	// The first download closes the open epoch (a shuffle: it holds that epoch's entries).
	resp, _ := listPost(t, p, a.Capability, "0")
	if k, err := io.Copy(io.Discard, resp.Body); err != nil || k != share.ListHeaderLen+n*share.EntryLen {
		t.Fatalf("first download: %d bytes, %v", k, err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, _ = listPost(t, p, a.Capability, "0")
	var entries uint64
	_, count, err := share.ReadListReply(resp.Body, func([]byte) error { entries++; return nil })
	runtime.ReadMemStats(&after)
	if err != nil || count != n || entries != n {
		t.Fatalf("second download: %d entries, %v", entries, err)
	}
	size := uint64(n * share.EntryLen)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Fatalf("a download of a %d-byte list allocated %d bytes", size, alloc)
	}
}
