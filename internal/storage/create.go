package storage

import (
	"context"
	"io"
)

// Creator is a Backend that can store one object only if its name is free, the check and
// the write one atomic step on the server: the S3 backend, by a PUT with If-None-Match: *,
// on a server that honours it (AWS S3 since 2024, versitygw). Contract, checked by the
// conformance suite (storagetest) for every backend that has it:
//
//   - PutNew is Put of an object that must not exist yet: ErrExists, storing nothing, if a
//     file dir/name exists (ErrIsDir if a directory does, ErrNotDir if a parent is a file).
//     Of concurrent PutNews of one name exactly one succeeds and its bytes stay; the others
//     fail with ErrExists. (A Put of that name still replaces it, as Put does.) A failed
//     PutNew stores nothing; after an error whose cause is not known (no answer), the
//     object may have been stored: a second PutNew of it then fails with ErrExists. A
//     backend may refuse a create larger than it makes in one step (ErrTooLarge).
//   - A backend that cannot know whether its server honours the condition learns it once,
//     at its first PutNew: it creates a probe object dir/tmp-probe-<hex> twice (the second
//     must fail) and deletes it, so a caller keeps names beginning "tmp-" in dir for
//     temporaries (one may outlive a crash). Where the server does not honour it (it stores
//     the second, or refuses the condition), every PutNew stores nothing and fails with an
//     error that wraps ErrNoConditions: the caller falls back to what it does without.
type Creator interface {
	Backend
	PutNew(ctx context.Context, dir, name string, r io.Reader, size int64) error
}
