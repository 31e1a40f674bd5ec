package open

import (
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/storage/remote"
)

func TestOpenLocal(t *testing.T) {
	for _, loc := range []string{t.TempDir(), "local:" + t.TempDir()} {
		b, err := Open(t.Context(), loc, Credentials{})
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if _, ok := b.(*local.Backend); !ok {
			t.Fatalf("%s: got %T", loc, b)
		}
	}
}

func TestOpenBad(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("VEIL_STORE_CREDENTIAL", "")
	for _, loc := range []string{"", "ftp://x/y", "s3://", "s3://host:1", "s3://host:1/bucket", "veil://host:1", "veil://host:1/path"} {
		if _, err := Open(t.Context(), loc, Credentials{}); !errors.Is(err, ErrLocation) {
			t.Errorf("%q: got %v, want ErrLocation", loc, err)
		}
	}
}

func TestOpenRemoteNeedsNoNetwork(t *testing.T) {
	cred := testCred()
	b, err := Open(t.Context(), "veil+http://127.0.0.1:1", Credentials{Store: &cred})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(*remote.Backend); !ok {
		t.Fatalf("got %T", b)
	}
}
