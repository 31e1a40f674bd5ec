module github.com/veil-project/veil

go 1.26.8

require (
	github.com/klauspost/compress v1.18.0
	github.com/restic/chunker v0.4.0
	github.com/spf13/cobra v1.9.1
	github.com/tink-crypto/tink-go/v2 v2.4.0
	github.com/zeebo/blake3 v0.2.4
	golang.org/x/crypto v0.58.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/spf13/pflag v1.0.6 // indirect
)
