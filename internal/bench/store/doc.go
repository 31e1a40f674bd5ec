// Package storebench measures the store ('veil bench store'): put/get throughput through
// the HTTPS API on loopback next to a plain disk copy and plain S3 PUT/GET against a real
// versitygw, all in one run so the ratios compare like with like on a shared machine.
//
// It imports store, the storage backends and minio-go; nothing imports it but cmd/veil.
package storebench
