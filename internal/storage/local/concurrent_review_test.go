package local_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/local"
)

// Opening a store that another backend (another veil process: a put and a mount, two
// puts) is writing to must not delete that writer's temporary files: New removes the
// temporary files a crash left behind, not those of Puts in flight.
func TestNewKeepsInFlightPutsTemps(t *testing.T) {
	dir := t.TempDir()
	b1, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- b1.Put(context.Background(), "d", "f", pr, 10) }()
	if _, err := pw.Write([]byte("01234")); err != nil { // the Put's temporary file exists now
		t.Fatal(err)
	}
	if _, err := local.New(dir); err != nil { // a second process opens the store
		t.Fatal(err)
	}
	go func() { pw.Write([]byte("56789")); pw.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("put in flight while another backend opened the store: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("put did not finish")
	}
	rc, err := b1.Get(context.Background(), "d", "f")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "0123456789" {
		t.Fatalf("got %q", got)
	}
}
