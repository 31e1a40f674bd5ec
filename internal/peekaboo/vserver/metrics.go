package vserver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/veil-project/veil/internal/server"
)

type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	batch    prometheus.Histogram
	relay    prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{reg: server.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_pkb_v_requests_total",
		Help: "Client requests, by operation and HTTP status."}, []string{"op", "code"})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_pkb_v_mix_batch_items",
		Help: "Items per mixed batch sent to the K-server.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)})
	m.relay = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_pkb_v_relay_seconds",
		Help: "Round trip of one relay batch to the K-server.", Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)})
	m.reg.MustRegister(m.requests, m.batch, m.relay)
	return m
}
