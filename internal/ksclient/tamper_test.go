package ksclient_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/oprf"
)

// A misbehaving key server (holding the real TLS certificate and the real key) that
// alters its answers is caught by the client: ErrBadResponse, logged.
func TestTamperedAnswersRejected(t *testing.T) {
	for _, suite := range []string{"ristretto255", "rsa"} {
		t.Run(suite, func(t *testing.T) {
			dir := initDir(t, suite)
			k := startKS(t, dir, keyserver.Config{})
			cred := k.cred("alice")
			sid, _ := oprf.ParseSuite(suite)
			var real oprf.PrivateKey
			ents, _ := os.ReadDir(filepath.Join(dir, "keys"))
			raw, _ := os.ReadFile(filepath.Join(dir, "keys", ents[0].Name()))
			real, err := oprf.ParsePrivateKey(sid, raw)
			if err != nil {
				t.Fatal(err)
			}
			other, err := oprf.GenerateKey(sid, rand.Reader, 0)
			if err != nil {
				t.Fatal(err)
			}
			tampers := map[string]func(*kswire.Request) *kswire.Response{
				"flipped evaluation": func(r *kswire.Request) *kswire.Response {
					ev, pr, _ := real.Evaluate(r.Elements)
					ev[0][len(ev[0])/2] ^= 0x10
					return &kswire.Response{Suite: sid, KeyID: real.ID(), Evals: ev, Proof: pr}
				},
				"another key": func(r *kswire.Request) *kswire.Response {
					ev, pr, err := other.Evaluate(r.Elements)
					if err != nil { // rsa: elements sized for the real modulus; answer garbage of the right size
						ev = r.Elements
					}
					return &kswire.Response{Suite: sid, KeyID: real.ID(), Evals: ev, Proof: pr}
				},
				"echo": func(r *kswire.Request) *kswire.Response {
					_, pr, _ := real.Evaluate(r.Elements)
					return &kswire.Response{Suite: sid, KeyID: real.ID(), Evals: r.Elements, Proof: pr}
				},
			}
			if sid == oprf.Ristretto255 {
				tampers["flipped proof"] = func(r *kswire.Request) *kswire.Response {
					ev, pr, _ := real.Evaluate(r.Elements)
					pr[1] ^= 1
					return &kswire.Response{Suite: sid, KeyID: real.ID(), Evals: ev, Proof: pr}
				}
				tampers["swapped evaluations"] = func(r *kswire.Request) *kswire.Response {
					ev, pr, _ := real.Evaluate(r.Elements)
					ev[0], ev[1] = ev[1], ev[0]
					return &kswire.Response{Suite: sid, KeyID: real.ID(), Evals: ev, Proof: pr}
				}
			}
			for name, tamper := range tampers {
				url := fakeKS(t, dir, tamper)
				var logs bytes.Buffer
				c := k.client(cred, "https", ksclient.Options{URL: url,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				_, err := c.DeriveKeys(context.Background(), digestsN(2, "tamper"))
				if !errors.Is(err, ksclient.ErrBadResponse) {
					t.Fatalf("%s: got %v, want ErrBadResponse", name, err)
				}
				if !strings.Contains(logs.String(), "rejected") {
					t.Fatalf("%s: rejection not logged: %q", name, logs.String())
				}
			}
		})
	}
}

// fakeKS serves /v1/evaluate with the real server certificate, answering through tamper.
func fakeKS(t *testing.T, dir string, tamper func(*kswire.Request) *kswire.Response) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req, err := kswire.ParseRequest(b)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		out, err := kswire.AppendResponse(nil, tamper(req))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Write(out)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "https://" + l.Addr().(*net.TCPAddr).String()
}
