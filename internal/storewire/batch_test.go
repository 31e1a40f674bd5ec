package storewire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

const batchVectorFile = "../../testdata/storewire/batch.json"

type batchObjectVector struct {
	Path   string `json:"path"`
	Data   string `json:"data"` // hex
	Create bool   `json:"create,omitempty"`
	Absent bool   `json:"absent,omitempty"`
	Match  string `json:"match,omitempty"` // hex SHA-256
}

func vectorObject(o storage.Object) batchObjectVector {
	v := batchObjectVector{Path: storage.Join(o.Dir, o.Name), Data: hex.EncodeToString(o.Data), Create: o.Create, Absent: o.Absent}
	if o.Match != nil {
		v.Match = hex.EncodeToString(o.Match[:])
	}
	return v
}

type batchVector struct {
	Comment string              `json:"comment"`
	Objects []batchObjectVector `json:"objects,omitempty"`
	Body    string              `json:"body"`   // hex
	Result  string              `json:"result"` // "ok", or the API error code the service answers
}

var vectorLimits = BatchLimits{Objects: 4, Bytes: 40, ObjectSize: 16, PathLen: 32}

func genBatchVectors() []batchVector {
	objs := []storage.Object{{Dir: "a/b", Name: "c", Data: []byte("hello")}, {Name: "top", Data: nil}, {Dir: "x", Name: "y", Data: []byte{0, 1, 2}}}
	good := AppendBatch(nil, objs)
	ok := batchVector{Comment: "three objects, one empty, one in the root", Body: hex.EncodeToString(good), Result: "ok"}
	for _, o := range objs {
		ok.Objects = append(ok.Objects, batchObjectVector{Path: storage.Join(o.Dir, o.Name), Data: hex.EncodeToString(o.Data)})
	}
	cobjs := []storage.Object{{Dir: "r", Name: "7", Data: []byte("root"), Create: true}, {Dir: "k", Name: "f.key", Data: []byte("rec")}}
	cond := AppendBatch(nil, cobjs)
	okc := batchVector{Comment: "version 2: a conditional object (create) and a plain one", Body: hex.EncodeToString(cond), Result: "ok"}
	for _, o := range cobjs {
		okc.Objects = append(okc.Objects, batchObjectVector{Path: storage.Join(o.Dir, o.Name), Data: hex.EncodeToString(o.Data), Create: o.Create})
	}
	aobjs := []storage.Object{{Dir: "p", Name: "m", Absent: true}, {Dir: "r", Name: "8", Data: []byte("root"), Create: true}, {Dir: "k", Name: "g.key", Data: []byte("rec")}}
	absent := AppendBatch(nil, aobjs)
	oka := batchVector{Comment: "version 3: an absent condition, a create and a plain object", Body: hex.EncodeToString(absent), Result: "ok"}
	for _, o := range aobjs {
		oka.Objects = append(oka.Objects, batchObjectVector{Path: storage.Join(o.Dir, o.Name), Data: hex.EncodeToString(o.Data), Create: o.Create, Absent: o.Absent})
	}
	h := sha256.Sum256([]byte("old root"))
	mobjs := []storage.Object{{Dir: "r", Name: "head", Data: []byte("new root"), Match: &h}, {Dir: "p", Name: "m", Absent: true},
		{Dir: "r", Name: "9", Data: []byte("root"), Create: true}, {Dir: "k", Name: "h.key", Data: []byte("rec")}}
	match := AppendBatch(nil, mobjs)
	okm := batchVector{Comment: "version 4: a match condition, an absent condition, a create and a plain object", Body: hex.EncodeToString(match), Result: "ok"}
	for _, o := range mobjs {
		okm.Objects = append(okm.Objects, vectorObject(o))
	}
	out := []batchVector{ok, okc, oka, okm}
	bad := func(comment string, body []byte, code string) {
		out = append(out, batchVector{Comment: comment, Body: hex.EncodeToString(body), Result: code})
	}
	bad("unknown version", append([]byte{BatchVersionMatch + 1}, good[1:]...), CodeBadRequest)
	unknownFlag := bytes.Clone(cond)
	unknownFlag[3] = 0x03
	bad("version 2: an unknown flag bit", unknownFlag, CodeBadRequest)
	noCreate := bytes.Clone(cond)
	noCreate[3] = 0
	bad("version 2 without a conditional object (not canonical: version 1)", noCreate, CodeBadRequest)
	v2Absent := bytes.Clone(cond)
	v2Absent[3] = 0x02
	bad("version 2: the absent flag (version 3 only)", v2Absent, CodeBadRequest)
	noAbsent := bytes.Clone(absent)
	noAbsent[3] = 0
	bad("version 3 without an absent condition (not canonical: version 2)", noAbsent, CodeBadRequest)
	both := bytes.Clone(absent)
	both[3] = 0x03
	bad("version 3: create and absent on one object", both, CodeBadRequest)
	v3Unknown := bytes.Clone(absent)
	v3Unknown[3] = 0x06
	bad("version 3: an unknown flag bit", v3Unknown, CodeBadRequest)
	bad("version 3: an absent condition with content", []byte{3, 0, 1, flagAbsent, 0, 1, 'm', 0, 0, 0, 1, 'x'}, CodeBadRequest)
	v3Match := bytes.Clone(absent)
	v3Match[3] = flagMatch
	bad("version 3: the match flag (version 4 only)", v3Match, CodeBadRequest)
	// The match object is the first: its flags are byte 3, its SHA-256 bytes 4 to 35.
	noMatch := slices.Concat(match[:3], []byte{0}, match[36:])
	bad("version 4 without a match condition (not canonical: version 3)", noMatch, CodeBadRequest)
	matchCreate := bytes.Clone(match)
	matchCreate[3] = flagMatch | flagCreate
	bad("version 4: match and create on one object", matchCreate, CodeBadRequest)
	matchAbsent := bytes.Clone(match)
	matchAbsent[3] = flagMatch | flagAbsent
	bad("version 4: match and absent on one object", matchAbsent, CodeBadRequest)
	v4Unknown := bytes.Clone(match)
	v4Unknown[3] = 0x08
	bad("version 4: an unknown flag bit", v4Unknown, CodeBadRequest)
	bad("version 4: a match condition cut short in its SHA-256", match[:20], CodeBadRequest)
	bad("no objects", []byte{1, 0, 0}, CodeBadRequest)
	bad("truncated in the last object", good[:len(good)-1], CodeBadRequest)
	bad("a byte after the last object", append(bytes.Clone(good), 0), CodeBadRequest)
	bad("more objects than the limit (4)", AppendBatch(nil, make([]storage.Object, 5)), CodeLimit)
	bad("an object over the object size limit (16)", AppendBatch(nil, []storage.Object{{Name: "f", Data: make([]byte, 17)}}), CodeTooLarge)
	many := make([]storage.Object, 3)
	for i := range many {
		many[i] = storage.Object{Name: "f", Data: make([]byte, 16)}
	}
	bad("more content than the batch limit (40): three objects of 16", AppendBatch(nil, many), CodeLimit)
	bad("empty path", []byte{1, 0, 1, 0, 0, 0, 0, 0, 0}, CodeLimit)
	bad("a path with a leading slash", AppendBatch(nil, []storage.Object{{Dir: "/a", Name: "f"}}), CodeInvalidName)
	return out
}

func TestBatchVectors(t *testing.T) {
	var vs []batchVector
	testutil.Vectors(t, batchVectorFile, &vs, func() any { return genBatchVectors() })
	for _, v := range vs {
		body := testutil.Unhex(t, v.Body)
		objs, err := ReadBatch(bytes.NewReader(body), vectorLimits)
		if v.Result != "ok" {
			if code, _ := Classify(err); err == nil || code != v.Result {
				t.Errorf("%s: got %v, want %s", v.Comment, err, v.Result)
			}
			continue
		}
		if err != nil || len(objs) != len(v.Objects) {
			t.Fatalf("%s: %d objects, %v", v.Comment, len(objs), err)
		}
		for i, o := range objs {
			if vectorObject(o) != v.Objects[i] {
				t.Errorf("%s: object %d differs", v.Comment, i)
			}
		}
		if again := AppendBatch(nil, objs); !bytes.Equal(again, body) {
			t.Errorf("%s: re-encoding differs from the vector", v.Comment)
		}
	}
}

func TestBatchBrokenBodyKeepsCause(t *testing.T) {
	good := AppendBatch(nil, []storage.Object{{Name: "f", Data: []byte("abc")}})
	_, err := ReadBatch(bytes.NewReader(good[:len(good)-2]), vectorLimits)
	if !errors.Is(err, ErrBadBatch) {
		t.Fatalf("truncated: %v", err)
	}
}

// FuzzReadBatch: arbitrary bodies never panic, stay within the limits, and what parses
// re-encodes to the same bytes.
func FuzzReadBatch(f *testing.F) {
	for _, v := range genBatchVectors() {
		b, _ := hex.DecodeString(v.Body)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		objs, err := ReadBatch(bytes.NewReader(body), vectorLimits)
		if err != nil {
			return
		}
		total := 0
		for _, o := range objs {
			total += len(o.Data)
		}
		if len(objs) > vectorLimits.Objects || int64(total) > vectorLimits.Bytes {
			t.Fatalf("past the limits: %d objects, %d bytes", len(objs), total)
		}
		if !bytes.Equal(AppendBatch(nil, objs), body) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// A batch's declared sizes cannot make the reader hold more than the batch's content
// limit: an object declaring more than the room left is refused before anything is
// allocated for it. Found by review: once objects could be as large as the batch, a full
// first object and a second that only declared as much again (a few bytes sent) made the
// server allocate twice --max-batch-bytes.
func TestReadBatchMemoryBound(t *testing.T) {
	const limit = 4 << 20
	l := BatchLimits{Objects: 256, Bytes: limit, ObjectSize: limit, PathLen: 4096}
	body := AppendBatch(nil, []storage.Object{{Name: "a", Data: make([]byte, limit-8)}, {Name: "b", Data: []byte("x")}})
	i := bytes.LastIndex(body, []byte("b")) // the second object's path: declare 4 MiB, send nothing
	body = binary.BigEndian.AppendUint32(body[:i+1:i+1], limit)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadBatch(bytes.NewReader(body), l)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("a batch declaring twice its limit: %v, want %v", err, ErrLimit)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > limit+1<<20 {
		t.Fatalf("reading it allocated %d bytes, over the batch's %d (+1 MiB)", got, limit)
	}
}

// A batch is sent in the lowest version that says it: one without a match condition is
// still version 3 or lower (taken by a service older than version 4), and a match makes
// it version 4 whatever else it holds.
func TestBatchLowestVersion(t *testing.T) {
	h := sha256.Sum256(nil)
	cases := []struct {
		objs []storage.Object
		want byte
	}{
		{[]storage.Object{{Name: "a"}}, BatchVersion},
		{[]storage.Object{{Name: "a", Create: true}, {Name: "b"}}, BatchVersionCond},
		{[]storage.Object{{Name: "a", Create: true}, {Name: "m", Absent: true}}, BatchVersionAbsent},
		{[]storage.Object{{Name: "m", Absent: true}, {Name: "a", Create: true}}, BatchVersionAbsent},
		{[]storage.Object{{Name: "a", Match: &h}}, BatchVersionMatch},
		{[]storage.Object{{Name: "m", Absent: true}, {Name: "a", Match: &h}, {Name: "c", Create: true}}, BatchVersionMatch},
	}
	for i, c := range cases {
		body := AppendBatch(nil, c.objs)
		if body[0] != c.want || BatchVersionFor(c.objs) != c.want {
			t.Errorf("case %d: version %d, want %d", i, body[0], c.want)
		}
		objs, err := ReadBatch(bytes.NewReader(body), vectorLimits)
		if err != nil || len(objs) != len(c.objs) {
			t.Fatalf("case %d: %v", i, err)
		}
		for j, o := range objs {
			if vectorObject(o) != vectorObject(c.objs[j]) {
				t.Errorf("case %d: object %d read back as %+v", i, j, o)
			}
		}
	}
}

// ErrChanged travels as 412 changed and comes back as storage.ErrChanged, with the
// service's message naming the batch object.
func TestChangedErrorRoundTrip(t *testing.T) {
	err := fmt.Errorf("put batch: batch object 2 (r/head): %w", storage.ErrChanged)
	code, status := Classify(err)
	if code != CodeChanged || status != http.StatusPreconditionFailed {
		t.Fatalf("classified as %s %d", code, status)
	}
	back := Error{Code: code, Message: err.Error()}.AsError()
	if !errors.Is(back, storage.ErrChanged) || !strings.Contains(back.Error(), "batch object 2 (r/head)") {
		t.Fatalf("decoded as %v", back)
	}
}
