// Package storebench measures the store ('veil bench store'): put/get throughput through
// the HTTPS API on loopback next to a plain disk copy and plain S3 PUT/GET against a real
// versitygw, all in one run so the ratios compare like with like on a shared machine.
//
// It also measures two store nodes sharing PostgreSQL against one bbolt node ('veil bench
// store-nodes', nodes.go), starting PostgreSQL for the run (pg.go).
//
// It imports store, the storage backends, minio-go and pgx; nothing imports it but cmd/veil.
package storebench
