// Package storetest starts real storage services for tests of the packages that talk to
// one (the remote backend, the DupLESS client, the FUSE mount): a fresh data directory
// with the user alice, served over loopback HTTPS, closed when the test ends. Test code
// only (internal/archtest keeps it out of every library package).
package storetest
