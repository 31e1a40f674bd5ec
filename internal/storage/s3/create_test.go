package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/s3"
	"github.com/veil-project/veil/internal/testutil"
)

// conditional reports a conditional PUT (a create or its probe).
func conditional(r *http.Request) bool {
	return r.Method == http.MethodPut && r.Header.Get("If-None-Match") != ""
}

// putNew creates dir/name holding data.
func putNew(b *s3.Backend, name, data string) error {
	return b.PutNew(context.Background(), "d", name, strings.NewReader(data), int64(len(data)))
}

// versitygw honours If-None-Match: the first create asks it once (two probe PUTs), and
// every create after that is one conditional PUT. Without this, the conformance suite's
// creates would pass on a server found not to honour them, by refusing every create.
func TestCreatesHonouredOnce(t *testing.T) {
	srv := testutil.StartS3(t)
	var puts atomic.Int64
	ep := srv.Proxy(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if conditional(r) {
			puts.Add(1)
		}
		next.ServeHTTP(w, r)
	})
	b := srv.Open(t, ep, "honoured", "veil")
	if err := putNew(b, "a", "one"); err != nil {
		t.Fatalf("first create: %v", err)
	}
	if n := puts.Load(); n != 3 {
		t.Fatalf("first create sent %d conditional PUTs, want 3 (the probe's two and its own)", n)
	}
	if err := putNew(b, "a", "two"); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("create of a taken name: %v, want ErrExists", err)
	}
	if err := putNew(b, "b", "three"); err != nil {
		t.Fatalf("third create: %v", err)
	}
	if n := puts.Load(); n != 5 {
		t.Fatalf("three creates sent %d conditional PUTs, want 5 (the probe once)", n)
	}
	if got := string(testutil.GetObject(t, b, "d", "a")); got != "one" {
		t.Fatalf("d/a reads %q", got)
	}
}

// A server that does not honour If-None-Match, whether it ignores the header (stores the
// probe twice), a gateway drops it (the request's signature no longer holds) or the
// server refuses it (501), is found out by the probe: every create
// then stores nothing and wraps ErrNoConditions, and nothing was ever overwritten; the
// answer is kept (no second probe), and the probe object is gone.
func TestCreatesOnServerWithoutConditions(t *testing.T) {
	srv := testutil.StartS3(t)
	for i, c := range []struct {
		name   string
		probes int64 // conditional PUTs the probe sends
		handle func(w http.ResponseWriter, r *http.Request, next http.Handler)
	}{
		{"ignores the condition", 2, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			srv.WithoutConditions(t, r)
			next.ServeHTTP(w, r)
		}},
		{"drops the header, breaking the signature (403)", 1, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			r.Header.Del("If-None-Match")
			next.ServeHTTP(w, r)
		}},
		{"refuses the condition (501)", 1, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			if conditional(r) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotImplemented)
				fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>`)
				return
			}
			next.ServeHTTP(w, r)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var puts atomic.Int64
			ep := srv.Proxy(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				if conditional(r) {
					puts.Add(1)
				}
				c.handle(w, r, next)
			})
			b := srv.Open(t, ep, fmt.Sprint("without-", i), "veil")
			if err := b.Put(context.Background(), "d", "taken", strings.NewReader("the only copy"), 13); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"taken", "free", "taken"} {
				err := putNew(b, name, "create")
				if want := "create d/" + name + ": the S3 server does not honour If-None-Match on PUT, so it cannot create an object only where none exists"; !errors.Is(err, storage.ErrNoConditions) || err.Error() != want {
					t.Fatalf("create of %s: %v, want ErrNoConditions saying %q", name, err, want)
				}
			}
			if got := string(testutil.GetObject(t, b, "d", "taken")); got != "the only copy" {
				t.Fatalf("a create on a server without conditions replaced an object: %q", got)
			}
			infos, err := b.List(context.Background(), "d")
			if err != nil || len(infos) != 1 {
				t.Fatalf("d holds %+v (error %v), want only the object put (no create, no probe left)", infos, err)
			}
			if n := puts.Load(); n != c.probes {
				t.Fatalf("%d conditional PUTs, want the probe's %d and no more", n, c.probes)
			}
		})
	}
}

// A probe that fails in a way that may pass (here AWS's 409 for a conflicting conditional
// write, which minio-go does not retry) decides nothing: that create fails with an error
// that is neither ErrNoConditions nor ErrExists, and the next create probes again.
func TestCreatesProbeFailureNotKept(t *testing.T) {
	srv := testutil.StartS3(t)
	var failing atomic.Bool
	failing.Store(true)
	ep := srv.Proxy(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if conditional(r) && failing.Swap(false) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict</Code><Message>A conflicting operation occurred.</Message></Error>`)
			return
		}
		next.ServeHTTP(w, r)
	})
	b := srv.Open(t, ep, "flaky", "veil")
	err := putNew(b, "a", "one")
	if err == nil || errors.Is(err, storage.ErrNoConditions) || errors.Is(err, storage.ErrExists) {
		t.Fatalf("create whose probe got a 409: %v, want a plain error", err)
	}
	if err := putNew(b, "a", "one"); err != nil {
		t.Fatalf("create after the server recovered: %v", err)
	}
	if err := putNew(b, "a", "two"); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("create of a taken name: %v, want ErrExists", err)
	}
}
