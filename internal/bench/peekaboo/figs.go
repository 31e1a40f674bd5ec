package pkbbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// query picks a search for pair i: the exact key (1 match), or a substring shared by 100
// keys ("-NNNNN" of the 7-digit number: up to 100 matches, the report's first-100 rule).
func (e *env) query(r *rand.Rand, substring bool) string {
	i := r.IntN(len(e.pairs))
	if substring {
		return fmt.Sprintf("-%05d", i/100)
	}
	return e.pairs[i].key
}

// fig9: latency vs pairs, plain vs Peekaboo, basic/advanced, exact/substring.
func (e *env) fig9(ctx context.Context, cfg Config, n int, emit func(Row)) error {
	r := rand.New(rand.NewPCG(uint64(n), 9))
	for _, substring := range []bool{false, true} {
		for _, adv := range []bool{false, true} {
			mode := map[bool]string{false: "exact", true: "substring"}[substring]
			kind := map[bool]string{false: "basic", true: "advanced"}[adv]
			var plainS, pkbS sample
			for q := 0; q < cfg.Queries; q++ {
				text := e.query(r, substring)
				t0 := time.Now()
				if err := e.plain.search(text, substring, adv, 100); err != nil {
					return err
				}
				t1 := time.Now()
				res, err := e.client.Search(ctx, text, client.SearchOptions{Substring: substring, Advanced: adv, Limit: 100})
				if err != nil {
					return err
				}
				if len(res.Found) == 0 {
					return fmt.Errorf("%s search %q found nothing", mode, text)
				}
				pkbS, plainS = append(pkbS, time.Since(t1)), append(plainS, t1.Sub(t0))
			}
			emit(plainS.row(Row{Experiment: "fig9", What: "plain " + kind + " " + mode, Pairs: n}))
			row := pkbS.row(Row{Experiment: "fig9", What: "peekaboo " + kind + " " + mode, Pairs: n})
			row.Ratio = row.P50us / plainS.row(Row{}).P50us
			if n == 1e5 && !substring {
				row.Paper = map[bool]string{false: "36.5 ms (2006 hw)", true: "slightly above basic"}[adv]
			}
			emit(row)
		}
	}
	return nil
}

// fig10: where one search's time goes (exact, basic, mixing off), beside the report's
// Fig. 10 (10^5 pairs, RSA-1024 + AES-128 on 2006 hardware).
func (e *env) fig10(ctx context.Context, cfg Config, n int, emit func(Row)) error {
	idx := index.New()
	for i := range e.pairs {
		idx.Put(&wire.KeyItem{ID: e.pairs[i].id, Key: e.pairs[i].key})
	}
	kb, err := readKey(e.d.KDir)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(n), 10))
	var seal, open, look, symEn, symDe, total sample
	for q := 0; q < cfg.Queries; q++ {
		text := e.query(r, false)
		t0 := time.Now()
		qq, err := e.client.NewQuery(text, client.SearchOptions{})
		if err != nil {
			return err
		}
		sealed, err := wire.SealQuery(e.client.KServerPub(), qq)
		t1 := time.Now()
		if err != nil {
			return err
		}
		oq, err := wire.OpenQuery(kb, sealed)
		t2 := time.Now()
		if err != nil {
			return err
		}
		hits := kserver.Lookup(idx, oq)
		t3 := time.Now()
		recs := make([][]byte, len(hits))
		for i, h := range hits {
			recs[i] = wire.SealMatch(oq, h.ID, "")
		}
		t4 := time.Now()
		for i, h := range hits {
			if _, err := wire.OpenMatch(qq, h.ID, recs[i]); err != nil {
				return err
			}
		}
		t5 := time.Now()
		if _, err := e.client.Search(ctx, text, client.SearchOptions{}); err != nil {
			return err
		}
		seal, open, look = append(seal, t1.Sub(t0)), append(open, t2.Sub(t1)), append(look, t3.Sub(t2))
		symEn, symDe, total = append(symEn, t4.Sub(t3)), append(symDe, t5.Sub(t4)), append(total, time.Since(t5))
	}
	tot := total.mean()
	steps := []struct {
		what  string
		s     sample
		paper string
	}{
		{"K-server look-up", look, "781 us (2.1%)"},
		{"public-key encryption (client HPKE seal)", seal, "1575 us RSA en. (4.3%)"},
		{"public-key decryption (K-server HPKE open)", open, "23834 us RSA de. (65.3%)"},
		{"symmetric encryption (K-server match records)", symEn, "236 us AES en. (0.6%)"},
		{"symmetric decryption (client)", symDe, "581 us AES de. (1.6%)"},
	}
	rest := tot
	for _, s := range steps {
		m := s.s.mean()
		rest -= m
		emit(s.s.row(Row{Experiment: "fig10", What: fmt.Sprintf("%s [%.1f%%]", s.what, 100*m/tot), Pairs: n, Paper: s.paper}))
	}
	emit(Row{Experiment: "fig10", What: fmt.Sprintf("network + relaying + V-server look-up (rest) [%.1f%%]", 100*rest/tot), Pairs: n,
		MeanUs: rest, Paper: "6427 us network (17.6%) + 3041 us other (8.3%)"})
	emit(total.row(Row{Experiment: "fig10", What: "total (one search, end to end)", Pairs: n, Paper: "36475 us"}))
	return nil
}
