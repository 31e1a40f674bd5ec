package storeserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/veil-project/veil/internal/server"
)

// metrics are the service's Prometheus series, on a registry of its own (so several
// services can live in one process, as in tests).
type metrics struct {
	reg       *prometheus.Registry
	ops       *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	integrity prometheus.Counter
	errors    *prometheus.CounterVec
	group     prometheus.Histogram
	batch     prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reg: server.NewRegistry(),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "veil_store_operations_total", Help: "Completed operations by kind."}, []string{"op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "veil_store_bytes_total", Help: "Object bytes received (put) and opened for sending (get)."}, []string{"op"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "veil_store_put_seconds", Help: "Time to receive and commit an object.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"op"}),
		integrity: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "veil_store_integrity_failures_total", Help: "Reads of content that did not match its hash."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "veil_store_http_errors_total", Help: "Error answers by code."}, []string{"code"}),
	}
	m.group = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "veil_store_commit_group_size", Help: "Uploads committed together by one database commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9)})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "veil_store_batch_objects", Help: "Objects per batch upload (POST /v1/batch).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9)})
	m.reg.MustRegister(m.ops, m.bytes, m.latency, m.integrity, m.errors, m.group, m.batch)
	return m
}

func (m *metrics) observe(op string, n int64, start time.Time) {
	m.ops.WithLabelValues(op).Inc()
	m.bytes.WithLabelValues(op).Add(float64(n))
	if op == "put" {
		m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	}
}
