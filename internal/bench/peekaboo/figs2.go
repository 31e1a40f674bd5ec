package pkbbench

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/local"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

func readKey(kdir string) (*wire.KServerKey, error) {
	b, err := os.ReadFile(filepath.Join(kdir, kserver.FileKey))
	if err != nil {
		return nil, err
	}
	return wire.ParseKServerKey(b)
}

// fig11: K-server access control with 1, 2, 4 pseudonyms (one per owner), with and
// without the client caching its opened pseudonyms.
func (e *env) fig11(ctx context.Context, cfg Config, n int, emit func(Row)) error {
	c, _, err := user(ctx, e.d, fmt.Sprintf("pclient-%d", n))
	if err != nil {
		return err
	}
	defer c.Close()
	name := fmt.Sprintf("pclient-%d", n)
	granted := 0
	for _, k := range []int{1, 2, 4} {
		for ; granted < k; granted++ {
			o, _, err := user(ctx, e.d, fmt.Sprintf("powner-%d-%d", n, granted))
			if err != nil {
				return err
			}
			if err := o.Grant(ctx, name); err != nil {
				return err
			}
			pub, _ := o.PseudonymPub(name)
			p := client.Pair{Key: fmt.Sprintf("restricted-%d", granted), Value: []byte("v"), Pseudonyms: [][32]byte{pub}}
			if _, err := o.Publish(ctx, []client.Pair{p}, 0, nil); err != nil {
				return err
			}
			o.Close()
		}
		for _, cached := range []bool{false, true} {
			var total, fetch sample
			var ps []ed25519.PrivateKey
			for q := 0; q < cfg.Queries/3+1; q++ {
				t0 := time.Now()
				if !cached || ps == nil {
					if ps, err = c.FetchPseudonyms(ctx); err != nil {
						return err
					}
				}
				t1 := time.Now()
				r, err := c.Search(ctx, "restricted-0", client.SearchOptions{Pseudonyms: ps})
				if err != nil {
					return err
				}
				if len(r.Found) != 1 || len(ps) != k {
					return fmt.Errorf("fig11: %d pseudonyms, %d results", len(ps), len(r.Found))
				}
				total, fetch = append(total, time.Since(t0)), append(fetch, t1.Sub(t0))
			}
			what := map[bool]string{false: "no caching", true: "caching"}[cached]
			row := total.row(Row{Experiment: "fig11", What: fmt.Sprintf("%d pseudonyms, %s (fetch+open grants %.0f us)", k, what, fetch.mean()), Pairs: n})
			emit(row)
		}
	}
	return nil
}

// throughput: searches per second from Clients concurrent clients, mixing off and on.
func (e *env) throughput(ctx context.Context, cfg Config, dir string, n int, emit func(Row)) error {
	for _, mix := range []bool{false, true} {
		if mix { // reopen the same state with the default mixer
			if err := e.d.Stop(); err != nil {
				return err
			}
			d, err := local.Start(filepath.Join(dir, "pkb"), local.Options{})
			if err != nil {
				return err
			}
			e.d = d
		}
		var done atomic.Int64
		var wg sync.WaitGroup
		var firstErr atomic.Value
		deadline := time.Now().Add(cfg.Duration)
		for g := 0; g < cfg.Clients; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := client.New(e.cred)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				defer c.Close()
				r := rand.New(rand.NewPCG(uint64(g), 11))
				for time.Now().Before(deadline) {
					if _, err := c.Search(ctx, e.query(r, false), client.SearchOptions{}); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			return err
		}
		what := fmt.Sprintf("%d clients, exact basic, mixing off", cfg.Clients)
		if mix {
			what = fmt.Sprintf("%d clients, exact basic, mixing on (batch 16, 5 ms)", cfg.Clients)
		}
		emit(Row{Experiment: "throughput", What: what, Pairs: n, PerSec: float64(done.Load()) / cfg.Duration.Seconds()})
	}
	return nil
}
