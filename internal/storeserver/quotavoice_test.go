package storeserver

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
)

// A put over quota reaches the client as ErrQuota saying "quota exceeded" once. Found
// deploying: every refused file's line ended "...quota 1048576: quota exceeded: quota
// exceeded" (the server's message already ends with the code's text).
func TestQuotaRefusalSaysItOnce(t *testing.T) {
	s := newTestService(t, Config{})
	_, cred := addUser(t, s, "frank", WithQuota(100<<10))
	b, err := remote.New(serve(t, s), cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	big := randBytes(9, 200<<10)
	err = b.Put(t.Context(), "", "big", bytes.NewReader(big), int64(len(big)))
	if !errors.Is(err, storage.ErrQuota) || strings.Count(err.Error(), "quota exceeded") != 1 {
		t.Fatalf("put over quota: %v", err)
	}
	t.Log(err)
}
