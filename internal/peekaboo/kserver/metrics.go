package kserver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/veil-project/veil/internal/server"
)

type metrics struct {
	reg     *prometheus.Registry
	items   *prometheus.CounterVec
	batch   prometheus.Histogram
	latency prometheus.Histogram
	pairs   prometheus.Gauge
	// pirOverflow counts pairs left out of the private-query table (bucket full).
	pirOverflow prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{reg: server.NewRegistry()}
	m.items = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_pkb_k_items_total",
		Help: "Relay items handled, by kind and status."}, []string{"kind", "status"})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_pkb_k_batch_items",
		Help: "Items per relay batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_pkb_k_batch_seconds",
		Help: "Time to answer a relay batch.", Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)})
	m.pairs = prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_pkb_k_pairs", Help: "Pairs held."})
	m.pirOverflow = prometheus.NewCounter(prometheus.CounterOpts{Name: "veil_pkb_k_pir_overflow_total",
		Help: "Pairs left out of the private-query table because their bucket was full."})
	m.reg.MustRegister(m.items, m.batch, m.latency, m.pairs, m.pirOverflow)
	return m
}
