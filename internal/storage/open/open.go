package open

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storage/s3"
	"github.com/veil-project/veil/internal/storewire"
)

// ErrLocation is a location string open cannot use.
var ErrLocation = errors.New("bad storage location")

// Credentials are the secrets a location may need. Empty fields fall back to the
// environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, VEIL_STORE_CREDENTIAL (a file).
// The caller resolves them (cmd/veil reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// VEIL_STORE_CREDENTIAL with EnvCredentials); this package never reads the environment.
type Credentials struct {
	S3AccessKey string
	S3SecretKey string
	Store       *storewire.Credential // for veil:// locations
	StoreFile   string                // credential file, used when Store is nil
}

// EnvCredentials fills what c leaves empty from the environment variables a user sets for
// storage (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, VEIL_STORE_CREDENTIAL), read through
// getenv (os.Getenv in cmd/veil).
func EnvCredentials(c Credentials, getenv func(string) string) Credentials {
	c.S3AccessKey = first(c.S3AccessKey, getenv("AWS_ACCESS_KEY_ID"))
	c.S3SecretKey = first(c.S3SecretKey, getenv("AWS_SECRET_ACCESS_KEY"))
	c.StoreFile = first(c.StoreFile, getenv("VEIL_STORE_CREDENTIAL"))
	return c
}

// Open returns the backend at location.
func Open(ctx context.Context, location string, cred Credentials) (storage.Backend, error) {
	scheme, rest, hasScheme := strings.Cut(location, "://")
	switch {
	case location == "":
		return nil, fmt.Errorf("%w: empty", ErrLocation)
	case strings.HasPrefix(location, "local:"):
		return local.New(strings.TrimPrefix(strings.TrimPrefix(location, "local:"), "//"))
	case !hasScheme:
		return local.New(location)
	case scheme == "s3":
		return openS3(ctx, rest, cred)
	case scheme == "veil" || scheme == "veil+https" || scheme == "veil+http":
		return openRemote(scheme, rest, cred)
	}
	return nil, fmt.Errorf("%w: %q: unknown scheme %q (want a path, local:, s3://, veil://)", ErrLocation, location, scheme)
}

func openS3(ctx context.Context, rest string, cred Credentials) (storage.Backend, error) {
	u, err := url.Parse("s3://" + rest)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: s3://%s: want s3://host:port/bucket[/prefix]", ErrLocation, rest)
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return nil, fmt.Errorf("%w: s3://%s: no bucket", ErrLocation, rest)
	}
	q := u.Query()
	cfg := s3.Config{Endpoint: u.Host, Bucket: bucket, Prefix: prefix, Region: q.Get("region"),
		TLS: q.Get("tls") != "0" && q.Get("tls") != "false", CreateBucket: q.Get("create") == "1",
		AccessKey: cred.S3AccessKey, SecretKey: cred.S3SecretKey}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, fmt.Errorf("%w: s3://%s: no access key (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", ErrLocation, rest)
	}
	return s3.New(ctx, cfg)
}

func openRemote(scheme, rest string, cred Credentials) (storage.Backend, error) {
	c := cred.Store
	if c == nil {
		file := cred.StoreFile
		if file == "" {
			return nil, fmt.Errorf("%w: %s://%s needs a store credential (--credential or VEIL_STORE_CREDENTIAL)", ErrLocation, scheme, rest)
		}
		lc, err := storewire.LoadCredential(file)
		if err != nil {
			return nil, err
		}
		c = &lc
	}
	host := strings.TrimSuffix(rest, "/")
	if host == "" {
		host = strings.TrimPrefix(strings.TrimPrefix(c.Endpoint, "https://"), "http://")
	}
	if host == "" || strings.ContainsAny(host, "/?#") {
		return nil, fmt.Errorf("%w: %s://%s: want %s://host:port", ErrLocation, scheme, rest, scheme)
	}
	proto := "https://"
	if scheme == "veil+http" {
		proto = "http://"
	}
	var eps []string // veil://host1:port,host2:port: the nodes of one service
	for _, h := range strings.Split(host, ",") {
		if h == "" {
			return nil, fmt.Errorf("%w: %s://%s: empty host in the list", ErrLocation, scheme, rest)
		}
		eps = append(eps, proto+h)
	}
	return remote.NewMulti(eps, *c)
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// LocalDir returns the directory of a local location (a path, or local:PATH), and false
// for any other scheme.
func LocalDir(location string) (string, bool) {
	if strings.HasPrefix(location, "local:") {
		return strings.TrimPrefix(strings.TrimPrefix(location, "local:"), "//"), true
	}
	if location == "" || strings.Contains(location, "://") {
		return "", false
	}
	return location, true
}
