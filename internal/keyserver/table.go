package keyserver

import (
	"context"
	"errors"
)

// ListenAndServe opens dir with cfg, binds cfg's addresses, serves until ctx is cancelled
// and closes: what 'veil keyserver serve' does.
func ListenAndServe(ctx context.Context, dir string, cfg Config) (err error) {
	s, err := Open(ctx, dir, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ls, err := Listen(cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ls)
}

// RateRow is one line of the paper's Fig. 2: the fastest online brute-force rate (queries
// per second) an attacker holding one client credential gets under a mechanism.
type RateRow struct {
	Mechanism  string  `json:"mechanism"`
	Formula    string  `json:"formula"`
	Configured float64 `json:"configured_qps"` // with the parameters given
	NetApp     float64 `json:"netapp_qps"`     // q = 825,000/week, t_D = t_U = 730 ms
	Paper      string  `json:"paper"`          // the paper's NetApp column
}

// NetAppRateLimit is the paper's NetApp scenario: q = 825,000 per one-week epoch,
// t_D = t_U = 730 ms.
func NetAppRateLimit() RateLimit { return DefaultRateLimit() }

// RateTable computes Fig. 2 for rl and for the NetApp numbers. unlimited is the measured
// rate of an unlimited key server (the paper's 3,200 q/s), used for the None row.
//
// Bounded: an attacker spends q at the end of one epoch and q at the start of the next,
// so 2q per t_E. Fixed delay: one query in flight, each waiting t_D. Exponential: the
// delay is at t_U in steady state; the paper's 2t_E/t_U queries per epoch is 2/t_U per second.
func RateTable(rl RateLimit, unlimited float64) []RateRow {
	row := func(r RateLimit) [3]float64 {
		var out [3]float64
		if r.Epoch > 0 {
			out[0] = 2 * float64(r.Q) / r.Epoch.Seconds()
		}
		if r.Delay > 0 {
			out[1] = 1 / r.Delay.Seconds()
		}
		if r.Max > 0 {
			out[2] = 2 / r.Max.Seconds()
		}
		return out
	}
	c, n := row(rl), row(NetAppRateLimit())
	return []RateRow{
		{"bounded", "2q/t_E", c[0], n[0], "2.73"},
		{"fixed delay", "1/t_D", c[1], n[1], "1.36"},
		{"exponential delay", "2t_E/t_U per t_E", c[2], n[2], "2.73"},
		{"none", "measured", unlimited, unlimited, "3,200"},
		{"offline (SHA-256, 1 MB..1 KB files)", "hash rate", 0, 0, "120-12,000"},
	}
}
