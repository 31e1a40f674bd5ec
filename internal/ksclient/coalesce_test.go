package ksclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/mle"
)

// Concurrent callers' derivations, coalesced into shared requests (MaxBatch 5 splits
// them further), each get their own keys, in order: the keys one lone request derives.
func TestCoalescedCallersGetTheirOwnKeys(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	alice := k.cred("alice")
	ctx := context.Background()
	want, err := k.client(alice, "https", ksclient.Options{}).DeriveKeys(ctx, digestsN(60, "co"))
	if err != nil {
		t.Fatal(err)
	}
	c := k.client(alice, "https", ksclient.Options{MaxBatch: 5})
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 { // callers of 1..9 digests: slices of the 60
		lo, hi := (i*5)%55, (i*5)%55+1+i%9
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.DeriveKeys(ctx, digestsN(60, "co")[lo:hi])
			if err == nil && len(got) != hi-lo {
				err = errors.New("wrong number of keys")
			}
			for j := range got {
				if err == nil && got[j] != want[lo+j] {
					err = errors.New("a caller got another digest's key")
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Close returns only after every coalesced request has finished, even when it races the
// loop starting one (run with -race: a WaitGroup Add racing its Wait is reported); callers
// still waiting then fail instead of hanging.
func TestCloseWaitsForRequests(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	alice := k.cred("alice")
	for i := range 100 {
		c, err := ksclient.New(alice, ksclient.Options{MaxBatch: 8})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 4 {
			go c.DeriveKeys(context.Background(), []mle.Digest{{byte(j)}})
		}
		time.Sleep(time.Duration(i%3) * 100 * time.Microsecond) // varies the interleaving, synchronises nothing
		c.Close()
		if _, err := c.DeriveKeys(context.Background(), []mle.Digest{{9}}); !errors.Is(err, ksclient.ErrClosed) {
			t.Fatalf("derive after Close: %v, want ErrClosed", err)
		}
	}
}
