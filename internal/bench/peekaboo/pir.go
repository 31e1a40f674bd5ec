package pkbbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// pirBench: private queries (two-server PIR) beside basic exact search on the same
// deployment: end-to-end latency, reply sizes, whole-process CPU per query (client, both
// servers and TLS all run in this process), and each server's own CPU per query, timed
// by calling its work directly (the K-server's relay processing of one item, the
// V-server's share) with nothing else running.
func (e *env) pirBench(ctx context.Context, cfg Config, n int, emit func(Row)) error {
	p, err := e.client.PIRParams(ctx)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(n), 12))
	var basicS, pirS sample
	var basicCPU, pirCPU time.Duration
	var basicBytes, pirBytes int
	for q := 0; q < cfg.Queries; q++ {
		text := e.query(r, false)
		c0, t0 := cpu(), time.Now()
		res, err := e.client.Search(ctx, text, client.SearchOptions{})
		c1, t1 := cpu(), time.Now()
		if err != nil || len(res.Found) != 1 {
			return fmt.Errorf("basic search %q: %v", text, err)
		}
		basicBytes = res.ReplyBytes
		pres, err := e.client.PrivateSearch(ctx, text, client.SearchOptions{})
		c2 := cpu()
		if err != nil || len(pres.Found) != 1 {
			return fmt.Errorf("private search %q: %d found, %v", text, len(pres.Found), err)
		}
		pirBytes = pres.ReplyBytes
		basicS, pirS = append(basicS, t1.Sub(t0)), append(pirS, time.Since(t1))
		basicCPU, pirCPU = basicCPU+c1-c0, pirCPU+c2-c1
	}
	what := fmt.Sprintf("table 2^%d x %d slots", p.Bits, p.Slots)
	b := basicS.row(Row{Experiment: "pir", What: "basic exact: latency", Pairs: n, Bytes: int64(basicBytes)})
	emit(b)
	row := pirS.row(Row{Experiment: "pir", What: "private query: latency (PIR + fetch), " + what, Pairs: n, Bytes: int64(pirBytes)})
	row.Ratio = row.P50us / b.P50us
	emit(row)
	qn := float64(cfg.Queries)
	emit(Row{Experiment: "pir", What: "basic exact: process CPU per query (client+servers+TLS)", Pairs: n, MeanUs: us(basicCPU) / qn})
	emit(Row{Experiment: "pir", What: "private query: process CPU per query (client+servers+TLS)", Pairs: n, MeanUs: us(pirCPU) / qn})
	return e.pirServerCPU(ctx, cfg, n, emit)
}

// pirServerCPU times each server's own work per query, basic and private.
func (e *env) pirServerCPU(ctx context.Context, cfg Config, n int, emit func(Row)) error {
	p, err := e.client.PIRParams(ctx)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(n), 13))
	var basic, private []wire.RelayItem
	var keys0 [][]byte
	for q := 0; q < cfg.Queries; q++ {
		text := e.query(r, false)
		qq, err := e.client.NewQuery(text, client.SearchOptions{})
		if err != nil {
			return err
		}
		sealed, err := wire.SealQuery(e.client.KServerPub(), qq)
		if err != nil {
			return err
		}
		pq, err := e.client.NewPrivateQuery(p, text)
		if err != nil {
			return err
		}
		basic = append(basic, wire.RelayItem{Kind: wire.KindQuery, Payload: sealed})
		private = append(private, wire.RelayItem{Kind: wire.KindPIR, Payload: pq.Request.Sealed})
		keys0 = append(keys0, pq.Request.Key0)
	}
	kcpu := func(items []wire.RelayItem) (float64, error) {
		c0 := cpu()
		for i := range items {
			res := e.d.K.Process(&wire.Relay{Items: items[i : i+1]})
			if res.Results[0].Status != wire.StatusOK {
				return 0, fmt.Errorf("k-server status %d", res.Results[0].Status)
			}
		}
		return us(cpu()-c0) / float64(len(items)), nil
	}
	kb, err := kcpu(basic)
	if err != nil {
		return err
	}
	kp, err := kcpu(private)
	if err != nil {
		return err
	}
	c0 := cpu()
	for _, k := range keys0 {
		if _, err := e.d.V.AnswerPIR(k); err != nil {
			return err
		}
	}
	vp := us(cpu()-c0) / float64(len(keys0))
	emit(Row{Experiment: "pir", What: "K-server CPU per query: basic exact (HPKE open, look-up, match record)", Pairs: n, MeanUs: kb})
	emit(Row{Experiment: "pir", What: "K-server CPU per query: private (HPKE open, DPF full domain, XOR, seal)", Pairs: n, MeanUs: kp})
	emit(Row{Experiment: "pir", What: "V-server CPU per query: private share (DPF full domain, XOR)", Pairs: n, MeanUs: vp})
	return nil
}

// cpu is this process's user + system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
