package storeserver

import (
	"runtime"
	"slices"
	"sync"
	"testing"
)

// A group's exec takes the requests queued meanwhile (committer.more): the ones it accepts
// join the group (answered with it, counted in its size), the others open the next group.
func TestCommitterMoreJoinsAndDefers(t *testing.T) {
	var runs [][]string // users of each exec call, joined members included
	var sizes []int
	started := make(chan struct{})
	var c *committer
	c = newCommitter(func(group []*commitReq) error {
		var users []string
		for _, r := range group {
			users = append(users, r.user)
		}
		if group[0].user == "first" {
			close(started)
			var late []*commitReq
			for len(late)+len(c.pending) < 4 { // until the four others have arrived
				late = append(late, c.more(len(group)+len(late), func(r *commitReq) bool { return r.user == "a" })...)
				runtime.Gosched()
			}
			for _, r := range late {
				users = append(users, r.user)
			}
		}
		runs = append(runs, users)
		return nil
	}, func(n int) { sizes = append(sizes, n) })
	defer c.close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.do("first", nil) }()
	<-started
	for _, u := range []string{"a", "b", "a", "b"} {
		wg.Add(1)
		go func() { defer wg.Done(); c.do(u, nil) }()
	}
	wg.Wait()
	if len(runs) != 2 || !slices.Equal(runs[0], []string{"first", "a", "a"}) || !slices.Equal(runs[1], []string{"b", "b"}) || !slices.Equal(sizes, []int{3, 2}) {
		t.Fatalf("groups %q of sizes %v, want [first a a] [b b] of sizes [3 2]", runs, sizes)
	}
}
