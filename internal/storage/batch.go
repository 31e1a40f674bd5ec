package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Object is one small object of a batch upload.
type Object struct {
	Dir, Name string
	Data      []byte
	// Create makes the object conditional: it must not exist yet, else the whole batch
	// fails with ErrExists and stores nothing (a compare-and-swap on a name). Only a
	// CreateBatcher honours it; PutAll refuses it on any other backend.
	Create bool
	// Absent makes the object a condition only: no object of that name may exist, else
	// the whole batch fails with ErrExists and stores nothing; nothing is stored under it
	// (Data must be empty). Only an AbsentBatcher honours it.
	Absent bool
	// Match makes the object conditional on what is stored under its name now: a file
	// whose content hashes (SHA-256) to *Match, else the whole batch fails with ErrChanged
	// and stores nothing (a compare-and-swap on content). Only a MatchBatcher honours it;
	// it goes with neither Create nor Absent.
	Match *[32]byte
}

// Batch limits every BatchPutter accepts: objects of at most BatchMaxObjectSize bytes, at
// most BatchMaxObjects of them and BatchMaxBytes of content per batch. Larger objects go
// through Put.
const (
	BatchMaxObjectSize = 64 << 10
	BatchMaxObjects    = 256
	BatchMaxBytes      = 4 << 20
)

// BatchPutter is a Backend that stores many small objects in one request: one round trip
// and one metadata commit (the storage service's POST /v1/batch). Contract, checked by the
// conformance suite (storagetest) for every backend that has it:
//
//   - Each object follows Put's rules (names, parents created, replacement, ErrIsDir,
//     ErrNotDir). The batch is atomic: readers see all of its objects or none of them
//     (the local directory backend: atomic against its other writers only; a reader or a
//     crash may see the batch's first objects, created ones last, see its PutBatch);
//     every object is checked before anything is stored, so an invalid one (bad name, an
//     object over BatchMaxObjectSize, a batch over the limits) fails the whole batch and
//     stores nothing. After an error whose cause is not known (no answer), the batch may
//     have been stored whole: sending it again is safe (puts of the same bytes).
//   - The answer is the same whether the content was new to the backend or not.
type BatchPutter interface {
	PutBatch(ctx context.Context, objs []Object) error
}

// CreateBatcher is a BatchPutter that honours Object.Create within the batch's
// transaction (the storage service, in process and remote, and since session 17 the
// local directory backend; a remote service older than batch version 2 answers such a
// batch with an error, and stores nothing). S3 has none: its conditional PUT holds for one
// object, not a batch; it is a Creator instead (docs/design.md, "Conditions on a directory
// and on S3").
type CreateBatcher interface {
	BatchPutter
	BatchCreates()
}

// AbsentBatcher is a CreateBatcher that also honours Object.Absent within the batch's
// transaction (the storage service from batch version 3; an older one refuses such a
// batch, storing nothing).
type AbsentBatcher interface {
	CreateBatcher
	BatchAbsents()
}

// MatchBatcher is an AbsentBatcher that also honours Object.Match within the batch's
// transaction (the storage service from batch version 4, session 12; an older one refuses
// such a batch, storing nothing).
type MatchBatcher interface {
	AbsentBatcher
	BatchMatches()
}

// MatchMover is a Backend whose moves can also be conditional on the source's content:
// the storage service from session 14, in process and remote, and the local directory
// backend from session 17.
//
//   - MoveMatch is Move of a file whose content hashes (SHA-256) to match, checked within
//     the move's transaction; otherwise (other content, a directory) it fails with
//     ErrChanged and moves nothing. The source is checked first: ErrNotFound when it is
//     absent, then ErrChanged, then ErrExists when the destination exists (so ErrExists
//     says the source matched). A remote service older than it refuses the move, moving
//     nothing, with an error that wraps ErrNoConditions.
type MatchMover interface {
	Backend
	MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error
}

// ErrNoConditions is a conditional object (Object.Create, Object.Absent, Object.Match) sent to a backend without
// conditional batches, a conditional move (MatchMover) to a service without them, or a
// create (Creator) on an S3 server that does not honour If-None-Match.
var ErrNoConditions = errors.New("conditional objects need a backend with conditional batches")

// LargeBatcher is a BatchPutter that also takes ONE object per batch larger than
// BatchMaxObjectSize, up to BatchMaxBytes (the batch's whole content), stored like a Put of
// it within the batch's commit: the storage service from session 10, where a tree root of
// a large namespace goes with a lone file's record this way. A service older than that
// refuses such a batch with ErrTooLarge, storing nothing.
type LargeBatcher interface {
	BatchPutter
	BatchLarge()
}

// CheckBatch checks a batch against the limits and name rules before it is sent; large
// allows one object over BatchMaxObjectSize (a LargeBatcher's batch).
func CheckBatch(objs []Object, large bool) error {
	if len(objs) > BatchMaxObjects {
		return fmt.Errorf("batch of %d objects, at most %d: %w", len(objs), BatchMaxObjects, ErrTooLarge)
	}
	total, bigs := 0, 0
	for _, o := range objs {
		if err := CheckPath(o.Dir, o.Name); err != nil {
			return err
		}
		if o.Absent && (o.Create || len(o.Data) > 0) {
			return fmt.Errorf("batch object %s: a condition (absent) is neither created nor holds data: %w", Join(o.Dir, o.Name), ErrInvalidName)
		}
		if o.Match != nil && (o.Create || o.Absent) {
			return fmt.Errorf("batch object %s: a match condition goes with neither create nor absent: %w", Join(o.Dir, o.Name), ErrInvalidName)
		}
		if len(o.Data) > BatchMaxObjectSize {
			if bigs++; !large || bigs > 1 {
				return fmt.Errorf("batch object %s: %d bytes, at most %d (but one object, on a backend that takes large ones): %w",
					Join(o.Dir, o.Name), len(o.Data), BatchMaxObjectSize, ErrTooLarge)
			}
		}
		total += len(o.Data)
	}
	if total > BatchMaxBytes {
		return fmt.Errorf("batch of %d bytes, at most %d: %w", total, BatchMaxBytes, ErrTooLarge)
	}
	return nil
}

// PutAll stores objs with be's PutBatch when it has one, else with one Put each, in order
// (not atomic then: a failure leaves the objects before it stored).
func PutAll(ctx context.Context, be Backend, objs []Object) error {
	if len(objs) == 0 {
		return nil
	}
	absent, match := false, false
	for _, o := range objs {
		absent = absent || o.Absent
		match = match || o.Match != nil
	}
	if mb, ok := be.(MatchBatcher); ok {
		return mb.PutBatch(ctx, objs)
	}
	if ab, ok := be.(AbsentBatcher); ok && !match {
		return ab.PutBatch(ctx, objs)
	}
	if cb, ok := be.(CreateBatcher); ok && !absent && !match {
		return cb.PutBatch(ctx, objs)
	}
	for _, o := range objs {
		if o.Create || o.Absent || o.Match != nil {
			return fmt.Errorf("%s: %w", Join(o.Dir, o.Name), ErrNoConditions)
		}
	}
	if bp, ok := be.(BatchPutter); ok {
		return bp.PutBatch(ctx, objs)
	}
	for _, o := range objs {
		if err := be.Put(ctx, o.Dir, o.Name, bytes.NewReader(o.Data), int64(len(o.Data))); err != nil {
			return err
		}
	}
	return nil
}
