package dupless

import (
	"errors"
	"time"
)

// What check says of a version a snapshot lists that is no longer stored. It is damage
// either way (check exits 3): nothing the storage holds proves that a version predates
// kept versions. What the roots do tell is whether a veil without kept versions can have
// replaced it. Such a veil kept only its newest 3 to 6 roots: writing root 4k it deleted
// roots 4k-6 to 4k-3 (best effort, no gap mark). So if the lowest root number stored (a
// root or a gap mark) is m, it wrote no root above m+5 (none above 3 when m is 1); and a
// kept version replaced by root L+1 (L the last retained root listing it, L+1 retained)
// shows that root L+1 was written by a veil that keeps versions, and so was every later
// one. A missing version replaced by a root above that bound was lost by the storage
// service (ErrVersionLost); one replaced at or below it may have been replaced by an older
// veil, which never kept it (ErrVersionGone). Either way the user's remedy for a version
// gone for good is 'veil forget' of the snapshots that list it.

// ErrVersionLost reports a version a snapshot lists that the storage no longer has, although
// the command that replaced it kept versions: the storage service lost or deleted it.
var ErrVersionLost = errors.New("this version is not stored, although the veil that replaced it kept versions: " +
	"the storage service lost or deleted it")

// missingVersion is a version a snapshot lists that is not stored: where (as check names
// it) and its record's hash.
type missingVersion struct {
	where string
	h     [32]byte
}

// versionEra tells, from the retained roots, which replaced versions a veil without kept
// versions may have replaced.
type versionEra struct {
	last     map[[32]byte]uint64 // the newest retained root listing each record hash
	retained map[uint64]bool
	oldMax   uint64 // the highest root number a veil without kept versions may have written
}

// newVersionEra reads roots (retained, oldest first) and written (the root numbers stored,
// gap marks included).
func newVersionEra(roots []*treeRoot, written map[uint64]time.Time) *versionEra {
	e := &versionEra{last: map[[32]byte]uint64{}, retained: map[uint64]bool{}}
	for _, r := range roots {
		e.retained[r.Seq] = true
		for _, h := range r.Entries {
			e.last[h] = r.Seq
		}
	}
	var lowest uint64
	for s := range written {
		if lowest == 0 || s < lowest {
			lowest = s
		}
	}
	switch {
	case lowest <= 1:
		e.oldMax = 3 // writing root 4 would have deleted root 1
	default:
		e.oldMax = lowest + 5
	}
	return e
}

// kept notes a kept version found: the root that replaced it was written by a veil that
// keeps versions.
func (e *versionEra) kept(h [32]byte) {
	if l, ok := e.last[h]; ok && e.retained[l+1] && l < e.oldMax {
		e.oldMax = l
	}
}

// why is the problem of the missing version h.
func (e *versionEra) why(h [32]byte) error {
	if e.last[h]+1 > e.oldMax {
		return ErrVersionLost
	}
	return ErrVersionGone
}
