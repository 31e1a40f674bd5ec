package kserver

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestReplayAcrossRestartFutureStamp: a query stamped ahead of the K-server's clock and
// answered just before a restart must not be answered again after it (for a private
// query a second answer under the same key and zero nonce gives the V-server the XOR of
// two answers). Without a store the floor is the start time plus the ahead allowance.
func TestReplayAcrossRestartFutureStamp(t *testing.T) {
	w := 10 * time.Minute
	t0 := time.UnixMilli(1_700_000_000_000)
	before := newReplayCache(w, t0.Add(-time.Hour))
	stamp := uint64(t0.Add(30 * time.Second).UnixMilli()) // client clock 30 s ahead
	nonce := [16]byte{1}
	if st := before.check(nonce, stamp, t0); st != 0 {
		t.Fatalf("original: %d", st)
	}
	restart := t0.Add(5 * time.Second)
	after := newReplayCache(w, restart)
	if st := after.check(nonce, stamp, restart.Add(time.Second)); st == 0 {
		t.Error("query seen before the restart accepted again after it")
	}
}

// TestFutureStampRefused: more than aheadAllowance ahead is refused, saying why.
func TestFutureStampRefused(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	c := newStoredReplayCache(10*time.Minute, 0, nil, &memStore{})
	st, err := c.verdict([16]byte{1}, uint64(t0.Add(31*time.Second).UnixMilli()), t0, false)
	if st != statusStale || err == nil || !strings.Contains(err.Error(), "31.0 s ahead of this server's clock; check the client's clock") {
		t.Fatalf("31 s ahead: %d %v", st, err)
	}
	if st := c.check([16]byte{2}, uint64(t0.Add(29*time.Second).UnixMilli()), t0); st != 0 {
		t.Fatalf("29 s ahead: %d", st)
	}
	if st := c.check([16]byte{3}, uint64(t0.Add(-9*time.Minute).UnixMilli()), t0); st != 0 {
		t.Fatalf("9 min behind: %d", st)
	}
}

// memStore is a replayStore that survives "restarts" of the cache, and can fail.
type memStore struct {
	m      int64
	nonces map[[16]byte]int64
	writes int
	fail   bool
}

func (s *memStore) mark(ms int64) error {
	if s.fail {
		return errors.New("disk full")
	}
	s.m = ms
	s.writes++
	return nil
}

func (s *memStore) ahead(n [16]byte, stamp, expired int64) error {
	if s.fail {
		return errors.New("disk full")
	}
	if s.nonces == nil {
		s.nonces = map[[16]byte]int64{}
	}
	maps.DeleteFunc(s.nonces, func(_ [16]byte, t int64) bool { return t < expired })
	s.nonces[n] = stamp
	s.writes++
	return nil
}

func (s *memStore) resume() *replayCache {
	return newStoredReplayCache(10*time.Minute, s.m, s.nonces, s)
}

// TestReplayStoreAcrossRestarts: with a store, nothing answered before a crash or a clean
// stop is answered after it; a client whose clock is right is refused at most markStep
// after a crash and not at all after a clean stop, even when a client whose clock runs
// ahead queried just before; the mark is written about once per markStep, not per query.
func TestReplayStoreAcrossRestarts(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	ms := func(d time.Duration) uint64 { return uint64(t0.Add(d).UnixMilli()) }
	s := &memStore{}
	c := s.resume()
	answered := map[[16]byte]uint64{}
	ask := func(c *replayCache, n byte, stamp uint64, now time.Time) uint8 {
		st := c.check([16]byte{n}, stamp, now)
		if st == 0 {
			answered[[16]byte{n}] = stamp
		}
		return st
	}
	for i := 0; i < 100; i++ { // 100 queries in 0.5 s: one write of the mark
		if st := ask(c, byte(i), ms(time.Duration(i)*5*time.Millisecond), t0.Add(time.Duration(i)*5*time.Millisecond)); st != 0 {
			t.Fatalf("query %d: %d", i, st)
		}
	}
	if s.writes != 1 || s.m != int64(ms(markStep)) {
		t.Fatalf("%d writes, mark %d", s.writes, s.m)
	}
	if st := ask(c, 200, ms(20*time.Second), t0.Add(time.Second)); st != 0 { // clock 19 s ahead
		t.Fatalf("ahead: %d", st)
	}
	if len(s.nonces) != 1 {
		t.Fatalf("query stamped ahead not stored: %v", s.nonces)
	}
	replayAll := func(c *replayCache, now time.Time, when string) {
		for n, stamp := range answered {
			if st := c.check(n, stamp, now); st == 0 {
				t.Errorf("%s: query %d (stamp %d) answered again", when, n[0], stamp)
			}
		}
	}

	// Crash: no shutdown.
	crashed := t0.Add(1100 * time.Millisecond)
	c = s.resume()
	replayAll(c, crashed.Add(100*time.Millisecond), "after a crash")
	if st := ask(c, 201, ms(markStep), crashed.Add(100*time.Millisecond)); st != statusStale {
		t.Errorf("stamp at the stored mark after a crash: %d", st)
	}
	if st := ask(c, 202, ms(1300*time.Millisecond), t0.Add(1300*time.Millisecond)); st != 0 {
		t.Errorf("fresh query after a crash: %d", st)
	}

	// Clean stop: the mark comes down to the last stamp answered under it.
	if err := c.shutdown(); err != nil {
		t.Fatal(err)
	}
	if s.m != int64(ms(1300*time.Millisecond)) {
		t.Fatalf("mark after shutdown: %d", s.m-int64(ms(0)))
	}
	c = s.resume()
	replayAll(c, t0.Add(1400*time.Millisecond), "after a clean stop")
	if st := ask(c, 203, ms(1301*time.Millisecond), t0.Add(1301*time.Millisecond)); st != 0 {
		t.Errorf("fresh query right after a clean stop: %d", st)
	}

	// A store that fails: nothing above the mark is answered.
	s.fail = true
	if st := c.check([16]byte{204}, ms(5*time.Second), t0.Add(5*time.Second)); st != statusInternal {
		t.Errorf("mark not stored: status %d", st)
	}
	if st := c.check([16]byte{205}, ms(25*time.Second), t0.Add(5*time.Second)); st != statusInternal {
		t.Errorf("nonce not stored: status %d", st)
	}
}

// TestReplayMarkInStateFile: the real store in kserver.db across a crash (the file closed
// without Close), a clean Close, and state written by a veil that kept no mark.
func TestReplayMarkInStateFile(t *testing.T) {
	dir, now := t.TempDir(), time.Now()
	open := initAt(t, dir, &now)
	nonce := func() (n [16]byte) { rand.Read(n[:]); return n }
	at := func(d time.Duration) uint64 { return uint64(now.Add(d).UnixMilli()) }

	s := open()
	n1, t1 := nonce(), at(0)
	n2, t2 := nonce(), at(25*time.Second) // a client clock 25 s ahead
	if s.replay.check(n1, t1, now) != 0 || s.replay.check(n2, t2, now) != 0 {
		t.Fatal("fresh queries refused on a new K-server")
	}
	s.db.Close() // crash
	s = open()
	if s.replay.check(n1, t1, now) == 0 || s.replay.check(n2, t2, now) == 0 {
		t.Fatal("query answered before a crash answered again")
	}
	now = now.Add(markStep + time.Millisecond)
	n3, t3 := nonce(), at(0)
	if st := s.replay.check(n3, t3, now); st != 0 {
		t.Fatalf("fresh query %s after a crash: %d", markStep, st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	now = now.Add(time.Millisecond)
	for _, q := range []struct {
		n [16]byte
		t uint64
	}{{n1, t1}, {n2, t2}, {n3, t3}} {
		if s.replay.check(q.n, q.t, now) == 0 {
			t.Fatal("query answered before a clean stop answered again")
		}
	}
	if st := s.replay.check(nonce(), at(0), now); st != 0 {
		t.Fatalf("fresh query right after a clean stop: %d", st)
	}
	s.Close()
}

// oldLayout rewrites the kserver.db in dir as a veil that kept no replay mark wrote it:
// no meta/replay, no bucket replay (docs/formats/peekaboo-state.md, "Changes").
func oldLayout(t *testing.T, dir string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, FileDB), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Delete(keyReplay); err != nil {
			return err
		}
		return tx.DeleteBucket(bucketReplay)
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// withoutPIR rewrites dir's relay.cred without a private-query table's geometry.
func withoutPIR(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, FileRelayCred)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := wire.ParseRelayCred(b)
	if err != nil {
		t.Fatal(err)
	}
	rc.PIRBits, rc.PIRSlots = 0, 0
	if b, err = json.Marshal(rc); err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeFromStateWithoutMark: the first start on state written by a veil that kept
// no replay mark serves keyword queries at once (that veil answered version-1 query
// plaintexts only, which wire.ParseQuery refuses: the must-fail vector "query version 1"
// in testdata/peekaboo/wire.json), and refuses private queries stamped up to a replay
// window ahead (that veil took them so far ahead), also after a clean restart within
// that window. Before, it refused every query for one window. Without a private-query
// table nothing is refused: the mark starts at 0.
func TestUpgradeFromStateWithoutMark(t *testing.T) {
	w := DefaultConfig().ReplayWindow
	for _, table := range []bool{true, false} {
		dir := t.TempDir()
		if err := Init(dir, InitOptions{Endpoint: "https://127.0.0.1:1", PIR: testPIR}); err != nil {
			t.Fatal(err)
		}
		if !table { // a K-server made before private queries: no geometry in relay.cred
			withoutPIR(t, dir)
		}
		oldLayout(t, dir)
		now := time.Now()
		open := func() *Server {
			s, err := Open(dir, Config{now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		at := func(d time.Duration) uint64 { return uint64(now.Add(d).UnixMilli()) }
		s := open()
		if st := s.replay.check([16]byte{1}, at(0), now); st != 0 {
			t.Fatalf("table %v: keyword query right after the upgrade: %d", table, st)
		}
		private := func(n byte, stamp uint64) uint8 {
			st, _ := s.replay.verdict([16]byte{n}, stamp, now, true)
			return st
		}
		want := uint8(0) // no table: no private query was ever answered
		if table {
			want = statusStale // an older veil may have answered it (stamped up to w ahead)
		}
		if st := private(2, at(0)); st != want {
			t.Fatalf("table %v: private query stamped within the old ahead window: %d, want %d", table, st, want)
		}
		wantMark := int64(0)
		if table {
			wantMark = now.Add(w).UnixMilli()
		}
		if m, ok, err := readMark(s.db); err != nil || !ok || m < wantMark || m > max(wantMark, now.Add(markStep).UnixMilli()) {
			t.Fatalf("table %v: stored mark %d (%v %v), want %d", table, m, ok, err, wantMark)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !table {
			continue
		}
		s = open() // a clean restart within the window keeps the private queries' floor
		if st := private(3, at(time.Second)); st != statusStale {
			t.Fatalf("private query after a clean restart within the window: %d", st)
		}
		if st := s.replay.check([16]byte{1}, at(0), now); st == 0 {
			t.Fatal("keyword query answered before a restart answered again")
		}
		now = now.Add(w + time.Millisecond)
		if st := private(4, at(0)); st != 0 {
			t.Fatalf("private query a window after the upgrade: %d", st)
		}
		s.Close()
	}
}

// initAt makes a K-server state in dir and returns an opener of the server on it whose
// clock reads *now (the test moves it).
func initAt(t *testing.T, dir string, now *time.Time) func() *Server {
	t.Helper()
	if err := Init(dir, InitOptions{Endpoint: "https://127.0.0.1:1", PIR: testPIR}); err != nil {
		t.Fatal(err)
	}
	return func() *Server {
		s, err := Open(dir, Config{now: func() time.Time { return *now }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}
