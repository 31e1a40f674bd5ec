module github.com/veil-project/veil

go 1.26.8

require (
	github.com/spf13/cobra v1.9.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.6 // indirect
)
