package metalbench

import (
	"context"
	"crypto/aes"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/ProtonMail/go-crypto/eax"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/client"
	"github.com/veil-project/veil/internal/metal/share"
)

// ShareConfig says what `veil bench metal --share` measures.
type ShareConfig struct {
	Ops  int           // NewAnonym and SendCapability calls, and receives (default 3)
	List int           // broadcast-list entries a receive downloads (default 10^4, the paper's)
	RTT  time.Duration // added inter-server round-trip time
}

// ShareRow is one measurement of Table 3's sharing rows.
type ShareRow struct {
	RTTms     float64 `json:"rtt_ms"`
	Op        string  `json:"op"`
	N         int     `json:"n"`
	MeanMs    float64 `json:"mean_ms"`
	MinMs     float64 `json:"min_ms"`
	Entries   int     `json:"entries,omitempty"`
	Bytes     int     `json:"download_bytes,omitempty"`
	DecryptMs float64 `json:"decrypt_ms,omitempty"` // the client's EAX trials alone
	Paper     string  `json:"paper"`
}

// RunShare starts two servers (2^4 files of 256 bytes: sharing does not touch the ORAM),
// creates and enrols two accounts, and measures NewAnonym (client only), SendCapability
// (both servers, 2PC) and ReceiveCapability of cfg.List entries (download from Server 1
// and trial decryption); the list is filled with real sends plus EAX entries under random
// keys (AppendShareEntries).
func RunShare(ctx context.Context, cfg ShareConfig, emit func(ShareRow)) error {
	if cfg.Ops <= 0 {
		cfg.Ops = 3
	}
	if cfg.List <= 0 {
		cfg.List = 10000
	}
	if cfg.List < cfg.Ops {
		return fmt.Errorf("--list %d is smaller than --ops %d (the list holds the sends too)", cfg.List, cfg.Ops)
	}
	p := access.Params{D: 4, Stash: 33, BlockSize: 256, FilesPerAccount: 4, Pack: 1, Base: 4}
	d, err := start(ctx, p, cfg.RTT/2)
	if err != nil {
		return err
	}
	defer d.stop()
	c, err := connect(ctx, d)
	if err != nil {
		return err
	}
	alice, err := c.CreateAccount(ctx)
	if err != nil {
		return err
	}
	bobAcct, err := c.CreateAccount(ctx)
	if err != nil {
		return err
	}
	bob, err := c.Enroll(ctx, bobAcct.Capability)
	if err != nil {
		return err
	}
	pk1, pk2, err := c.ShareKeys(ctx)
	if err != nil {
		return err
	}
	var anonyms []share.Anonym
	times := make([]time.Duration, 0, cfg.Ops)
	for i := 0; i < cfg.Ops; i++ {
		t0 := time.Now()
		a, err := share.NewAnonym(bob, uint32(i), pk1, pk2, rand.Reader)
		if err != nil {
			return err
		}
		times = append(times, time.Since(t0))
		anonyms = append(anonyms, a)
	}
	emit(shareRow(cfg.RTT, "new_anonym", times, "0.03 s"))
	times = times[:0]
	for i := 0; i < cfg.Ops; i++ {
		req := share.SendRequest{Capability: alice.Capability, File: alice.First, Perm: ac.Read, To: anonyms[i]}
		t0 := time.Now()
		if err := c.SendCapability(ctx, req, pk1, pk2); err != nil {
			return err
		}
		times = append(times, time.Since(t0))
	}
	emit(shareRow(cfg.RTT, "send_capability", times, "1.13 s (19 ms RTT)"))
	return receiveRows(ctx, c, d, bobAcct.Capability, bob, cfg, emit)
}

func connect(ctx context.Context, d *deployment) (*client.Client, error) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, err := client.New(ctx, d.dep)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
	}
}

func receiveRows(ctx context.Context, c *client.Client, d *deployment, bobCap []byte, bob share.UserKeys, cfg ShareConfig, emit func(ShareRow)) error {
	fill := make([][]byte, 0, cfg.List-cfg.Ops)
	for i := cfg.Ops; i < cfg.List; i++ {
		e, err := randomEntry()
		if err != nil {
			return err
		}
		fill = append(fill, e)
	}
	if err := d.s1.AppendShareEntries(fill); err != nil {
		return err
	}
	var times, dec []time.Duration
	var lr share.ListReply
	for i := 0; i < cfg.Ops; i++ {
		t0 := time.Now()
		got, l, err := c.ReceiveCapabilities(ctx, bobCap, bob.BK, 0)
		if err != nil {
			return err
		}
		times = append(times, time.Since(t0))
		if len(got) != cfg.Ops {
			return fmt.Errorf("bob found %d of the %d capabilities sent to him", len(got), cfg.Ops)
		}
		lr = l
		t1 := time.Now()
		o, _ := share.NewOpener(bob.BK)
		for _, e := range l.Entries {
			o.Open(e)
		}
		dec = append(dec, time.Since(t1))
	}
	r := shareRow(cfg.RTT, "receive_capability", times, "1.76 s for 10^4 (1 MB, ~10 ms to decrypt)")
	r.Entries, r.Bytes = len(lr.Entries), share.ListHeaderLen+len(lr.Entries)*share.EntryLen
	var sum time.Duration
	for _, t := range dec {
		sum += t
	}
	r.DecryptMs = ms(sum) / float64(len(dec))
	emit(r)
	return nil
}

// randomEntry is a list entry under a random key (what a send to another user looks like).
func randomEntry() ([]byte, error) {
	k := make([]byte, 16+16+64)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	blk, _ := aes.NewCipher(k[:16])
	aead, err := eax.NewEAX(blk)
	if err != nil {
		return nil, err
	}
	return append(append([]byte{}, k[16:32]...), aead.Seal(nil, k[16:32], k[32:], nil)...), nil
}

func shareRow(rtt time.Duration, op string, times []time.Duration, paper string) ShareRow {
	r := row(access.Params{}, rtt, op, times, nil, paper)
	return ShareRow{RTTms: r.RTTms, Op: op, N: r.N, MeanMs: r.MeanMs, MinMs: r.MinMs, Paper: paper}
}
