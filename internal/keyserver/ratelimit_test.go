package keyserver

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/server"
)

func TestExpStep(t *testing.T) {
	ms := time.Millisecond
	total, next := expStep(0, 0, 5, 4, 10*ms, 50*ms) // fresh: 10+20+40+50
	if total != 120*ms || next != int64(50*ms) {
		t.Fatalf("fresh: total %v next %v", total, time.Duration(next))
	}
	if total, _ := expStep(5, int64(50*ms), 6, 1, 10*ms, 50*ms); total != 50*ms {
		t.Fatalf("next epoch keeps the delay: %v", total)
	}
	if total, _ := expStep(5, int64(50*ms), 7, 1, 10*ms, 50*ms); total != 10*ms {
		t.Fatalf("after an idle epoch the delay resets: %v", total)
	}
}

// A crash (no Close) never gives a client back queries: it resumes from its reservation.
func TestBoltCrashIsConservative(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.db")
	ctx := context.Background()
	s, err := openBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if ok, err := s.Take(ctx, "a", 1, 1, 1000); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	s.db.Close() // crash: the in-memory exact count is lost
	s, err = openBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	used := 0
	for {
		ok, err := s.Take(ctx, "a", 1, 1, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		used++
	}
	if used > 1000-30 {
		t.Fatalf("after a crash the client got %d more queries, more than the %d left", used, 1000-30)
	}
	if used < 1000-30-1000/100-1 {
		t.Fatalf("after a crash the client lost more than one reservation: %d left", used)
	}
	// A new epoch starts from zero.
	if ok, _ := s.Take(ctx, "a", 2, 1000, 1000); !ok {
		t.Fatal("new epoch did not reset the count")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLimiterModes(t *testing.T) {
	st, err := openBoltStore(filepath.Join(t.TempDir(), "rl.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var slept time.Duration
	now := time.Unix(1_000_000, 0)
	l := &limiter{st: st, now: func() time.Time { return now },
		sleep: func(_ context.Context, d time.Duration) error { slept += d; return nil }}
	ctx := context.Background()

	l.p = RateLimit{Mode: ModeFixed, Delay: 100 * time.Millisecond}
	rel, err := l.admit(ctx, "a", 3)
	if err != nil || slept != 300*time.Millisecond {
		t.Fatalf("fixed: %v slept %v", err, slept)
	}
	if _, err := l.admit(ctx, "a", 1); !errors.Is(err, ErrBusy) {
		t.Fatalf("second in flight: %v", err)
	}
	if r2, err := l.admit(ctx, "b", 1); err != nil {
		t.Fatalf("other client: %v", err)
	} else {
		r2()
	}
	rel()
	if r3, err := l.admit(ctx, "a", 1); err != nil {
		t.Fatalf("after release: %v", err)
	} else {
		r3()
	}

	slept = 0
	l.p = RateLimit{Mode: ModeExp, Start: 10 * time.Millisecond, Max: 40 * time.Millisecond, Epoch: time.Hour}
	for _, want := range []time.Duration{10, 20, 40, 40} {
		slept = 0
		r, err := l.admit(ctx, "c", 1)
		if err != nil || slept != want*time.Millisecond {
			t.Fatalf("exp: %v slept %v want %vms", err, slept, want)
		}
		r()
	}
	slept = 0
	if r, err := l.admit(ctx, "other", 1); err != nil || slept != 10*time.Millisecond {
		t.Fatalf("exp: another client starts at the first delay: %v %v", err, slept)
	} else {
		r()
	}
	now = now.Add(2 * time.Hour) // an idle epoch
	slept = 0
	r, _ := l.admit(ctx, "c", 1)
	r()
	if slept != 10*time.Millisecond {
		t.Fatalf("exp after idle epoch: slept %v", slept)
	}

	l.p = RateLimit{Mode: ModeBounded, Q: 5, Epoch: time.Hour}
	if _, err := l.admit(ctx, "d", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.admit(ctx, "d", 1); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("bounded over q: %v", err)
	}
	now = now.Add(time.Hour)
	if _, err := l.admit(ctx, "d", 5); err != nil {
		t.Fatalf("bounded next epoch: %v", err)
	}
}

func TestRateTableNetApp(t *testing.T) {
	rows := RateTable(NetAppRateLimit(), 3200)
	want := map[string]float64{"bounded": 2.73, "fixed delay": 1.37, "exponential delay": 2.74}
	for _, r := range rows {
		if w, ok := want[r.Mechanism]; ok && math.Abs(r.NetApp-w) > 0.01 {
			t.Fatalf("%s: %.3f, want %.2f", r.Mechanism, r.NetApp, w)
		}
	}
}

func TestConfigChecks(t *testing.T) {
	for _, rl := range []RateLimit{{Mode: "sometimes"}, {Mode: ModeBounded}, {Mode: ModeFixed},
		{Mode: ModeExp, Start: time.Second, Max: time.Millisecond, Epoch: time.Hour}} {
		if rl.check() == nil {
			t.Fatalf("%+v accepted", rl)
		}
	}
}

// ratelimit.db records its version: a file written before it did (no meta bucket) opens
// and gets it; a file of another version is refused.
func TestBoltStoreVersion(t *testing.T) {
	old := filepath.Join(t.TempDir(), "old.db")
	db, err := bolt.Open(old, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket(bucketCounts)
		return err
	})
	db.Close()
	s, err := openBoltStore(old)
	if err != nil {
		t.Fatalf("a file without a version: %v", err)
	}
	s.db.Close()
	future := filepath.Join(t.TempDir(), "future.db")
	if db, err = server.OpenState(future, "key server", "2", time.Second); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := openBoltStore(future); err == nil || !strings.Contains(err.Error(), `state version "2"`) {
		t.Fatalf("a file of version 2: %v", err)
	}
}
