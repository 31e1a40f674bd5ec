package storewire

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Version is the API version, the first path segment of every object route ("/v1/...").
const Version = "v1"

// HeaderContentSHA256 carries, on GET of an object, the lowercase hex SHA-256 the server
// recorded when it received the object; the client checks the body against it.
const HeaderContentSHA256 = "Veil-Content-Sha256"

// HeaderDeclaredLength carries, on PUT, the object's length when the body is sent chunked.
// Clients send bodies chunked so that a body that fails at its very end is never taken
// for a whole one (the chunked terminator is written only after a clean end); the service
// rejects a body whose length differs from the declared one.
const HeaderDeclaredLength = "Veil-Declared-Length"

// HeaderVerifyStored, "1" on a PUT or batch, asks the service to check content it already
// holds under the hash of what it receives (read it back, hash it) and to replace it if it
// no longer matches, rather than keep it on its size alone: veil put --force, repairing a
// chunk damaged in the service's blob store. The answer is the same whether the content
// was held or not. Without it a duplicate costs the blob store one stat.
const HeaderVerifyStored = "Veil-Verify-Stored"

// Entry is one directory entry in JSON (stat, list and search answers).
type Entry struct {
	Dir     string    `json:"dir"`
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	IsDir   bool      `json:"is_dir"`
	ModTime time.Time `json:"mod_time"`
}

// FromInfo and Info convert between Entry and storage.Info.
func FromInfo(i storage.Info) Entry {
	return Entry{Dir: i.Dir, Name: i.Name, Size: i.Size, IsDir: i.IsDir, ModTime: i.ModTime.UTC()}
}

func (e Entry) Info() storage.Info {
	return storage.Info{Dir: e.Dir, Name: e.Name, Size: e.Size, IsDir: e.IsDir, ModTime: e.ModTime}
}

// Stats is the body of GET /v1/stats.
type Stats struct {
	Users         int     `json:"users"`
	Objects       int64   `json:"objects"`
	LogicalBytes  int64   `json:"logical_bytes"`
	Blobs         int64   `json:"blobs"`
	PhysicalBytes int64   `json:"physical_bytes"`
	GarbageBlobs  int64   `json:"garbage_blobs"`
	GarbageBytes  int64   `json:"garbage_bytes"`
	DedupRatio    float64 `json:"dedup_ratio"`
}

// Error is the JSON body of every non-2xx answer.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes, one per storage sentinel plus the service's own.
const (
	CodeNotFound     = "not_found"
	CodeExists       = "exists"
	CodeChanged      = "changed"
	CodeNotEmpty     = "not_empty"
	CodeIsDir        = "is_dir"
	CodeNotDir       = "not_dir"
	CodeInvalidName  = "invalid_name"
	CodeIntegrity    = "integrity"
	CodePermission   = "permission"
	CodeTooLarge     = "too_large"
	CodeQuota        = "quota"
	CodeSizeMismatch = "size_mismatch"
	CodeUnauthorized = "unauthorized"
	CodeBadRequest   = "bad_request"
	CodeLimit        = "limit"
	CodeMethod       = "method"
	CodeNoSpace      = "no_space"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
)

// ErrUnauthorized is a missing or wrong credential.
var ErrUnauthorized = errors.New("unauthorized")

// ErrLimit is a request past one of the service's limits on paths, directory sizes or
// metadata (docs/formats/store-api.md, "Limits"): no retry can succeed.
var ErrLimit = errors.New("limit exceeded")

// ErrMethod is a method a route does not serve (405).
var ErrMethod = errors.New("method not allowed")

// ErrNoSpace is a service whose disk is full (507 no_space): it cannot store anything
// until an operator frees space. ErrUnavailable is a service whose blob storage or
// metadata database (PostgreSQL) does not answer (503 unavailable, with Retry-After in
// seconds).
var (
	ErrNoSpace     error = &cannotStore{"the store is out of disk space"}
	ErrUnavailable error = &cannotStore{"the store's blob storage or metadata database does not answer"}
)

// cannotStore is an error that also matches storage.ErrCannotStore.
type cannotStore struct{ msg string }

func (e *cannotStore) Error() string        { return e.msg }
func (e *cannotStore) Is(target error) bool { return target == storage.ErrCannotStore }

// RetryAfterSeconds is the Retry-After of a 503 unavailable answer.
const RetryAfterSeconds = 5

var codes = []struct {
	code   string
	status int
	err    error
}{
	{CodeNotFound, http.StatusNotFound, storage.ErrNotFound},
	{CodeExists, http.StatusConflict, storage.ErrExists},
	{CodeChanged, http.StatusPreconditionFailed, storage.ErrChanged},
	{CodeNotEmpty, http.StatusConflict, storage.ErrNotEmpty},
	{CodeIsDir, http.StatusConflict, storage.ErrIsDir},
	{CodeNotDir, http.StatusConflict, storage.ErrNotDir},
	{CodeInvalidName, http.StatusBadRequest, storage.ErrInvalidName},
	{CodeIntegrity, http.StatusInternalServerError, storage.ErrIntegrity},
	{CodePermission, http.StatusForbidden, storage.ErrPermission},
	{CodeTooLarge, http.StatusRequestEntityTooLarge, storage.ErrTooLarge},
	{CodeQuota, http.StatusInsufficientStorage, storage.ErrQuota},
	{CodeSizeMismatch, http.StatusBadRequest, storage.ErrSizeMismatch},
	{CodeUnauthorized, http.StatusUnauthorized, ErrUnauthorized},
	{CodeLimit, http.StatusBadRequest, ErrLimit},
	{CodeBadRequest, http.StatusBadRequest, ErrBadBatch},
	{CodeMethod, http.StatusMethodNotAllowed, ErrMethod},
	{CodeNoSpace, http.StatusInsufficientStorage, ErrNoSpace},
	{CodeUnavailable, http.StatusServiceUnavailable, ErrUnavailable},
}

// Classify returns the code and HTTP status for err.
func Classify(err error) (code string, status int) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	return CodeInternal, http.StatusInternalServerError
}

// AsError turns a decoded error body back into an error wrapping the matching sentinel.
func (e Error) AsError() error {
	for _, c := range codes {
		if c.code == e.Code {
			// A service's message usually ends with the code's text already (a wrapped
			// storage error): it is said once.
			msg := strings.TrimSuffix(e.Message, ": "+c.err.Error())
			if msg == c.err.Error() {
				return fmt.Errorf("store: %w", c.err)
			}
			return fmt.Errorf("store: %s: %w", msg, c.err)
		}
	}
	return fmt.Errorf("store: %s (%s)", e.Message, e.Code)
}

// AddUserRequest is the body of POST /v1/users (admin).
type AddUserRequest struct {
	Name  string `json:"name"`
	Quota int64  `json:"quota,omitempty"` // logical bytes; 0: none
}

// SetQuotaRequest is the body of PATCH /v1/users/{name} (admin, session 16).
type SetQuotaRequest struct {
	Quota *int64 `json:"quota"` // logical bytes; 0: none; required
}

// User is one element of GET /v1/users (admin).
type User struct {
	Name    string    `json:"name"`
	Admin   bool      `json:"admin"`
	Quota   int64     `json:"quota"`
	Used    int64     `json:"used"`
	Created time.Time `json:"created"`
}

// GCReport is the answer of POST /v1/gc (admin).
type GCReport struct {
	Blobs        int64 `json:"blobs"`
	Bytes        int64 `json:"bytes"`
	OrphanBlobs  int64 `json:"orphan_blobs"`
	StaleUploads int64 `json:"stale_uploads"`
}
