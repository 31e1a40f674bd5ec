package dupless

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// Fallback reasons in the summary name the host, not Go's `Post "URL":` wording, and a
// long one is cut between words ("tls: failed to verify ce..." was cut mid-word).
func TestFallbackReasonIsReadable(t *testing.T) {
	tlsErr := errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of \"crypto/rsa: verification error\" while trying to verify candidate authority certificate \"veil key server CA\")")
	err := fmt.Errorf("key server unavailable: %w", &url.Error{Op: "Post", URL: "https://ks.example.org:7443/v1/evaluate", Err: tlsErr})
	r := reason(err)
	if strings.Contains(r, "https://") || !strings.HasPrefix(r, "key server unavailable: ks.example.org:7443: tls: failed to verify certificate") {
		t.Fatalf("reason = %q", r)
	}
	if !strings.HasSuffix(r, " ...") || len(r) > 170 {
		t.Fatalf("long reason not cut: %q", r)
	}
	words := strings.Fields(strings.TrimSuffix(r, " ..."))
	last := words[len(words)-1]
	i := strings.Index(err.Error(), last)
	if next := err.Error()[i+len(last)]; i < 0 || next >= 'a' && next <= 'z' || next >= 'A' && next <= 'Z' {
		t.Fatalf("cut mid-word: %q", last)
	}
	if short := errors.New("no key server configured"); reason(short) != short.Error() {
		t.Fatalf("short reason changed: %q", reason(short))
	}
}
