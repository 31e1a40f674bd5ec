package dupless

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// shiftDeviceClock moves the device's clocks (deviceNow) by wall and up for the rest of
// the test.
func shiftDeviceClock(t *testing.T, wall, up time.Duration) {
	orig := deviceNow
	deviceNow = func() devClock {
		d := orig()
		d.wall, d.up = d.wall.Add(wall), d.up+up
		return d
	}
	t.Cleanup(func() { deviceNow = orig })
}

// A lone put builds on the device's copy of the root it stored a moment ago instead of
// reading it again: no root GET, one lock-free batch. A copy another device made stale
// gets the batch refused and the put goes under the lock; a damaged copy, one older than
// rootCopyFresh, or one of another boot is not used (the put reads the root, and keeps a
// new copy).
func TestLonePutBuildsOnRootCopy(t *testing.T) {
	if !deviceNow().ok {
		t.Skip("no boot clock here")
	}
	rr := &rootReqBE{countingBE: countingBE{Backend: newBackend(t)}}
	be := &gateBE{absentBE: absentBE{&condBE{Backend: rr}}}
	device := profileDevices(t, be, true)
	a, b := device(), device()
	dir := t.TempDir()
	seed := uint64(90)
	put := func(c *Client, name string) {
		t.Helper()
		src := filepath.Join(dir, name)
		seed++
		write(t, src, randBytes(4096, seed))
		if _, err := c.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
	}
	rootGets := func(name string, c *Client) int64 {
		t.Helper()
		gets, absents := rr.gets.Load(), be.absents.Load()
		put(c, name)
		if n := be.absents.Load() - absents; n != 1 {
			t.Fatalf("put of %s: %d lock-free batches, want 1", name, n)
		}
		return rr.gets.Load() - gets
	}
	put(a(), "first") // a new namespace: under the lock
	if g := rootGets("second", a()); g != 1 {
		t.Fatalf("the first lone put read %d roots, want 1 (no copy yet)", g)
	}
	for _, name := range []string{"third", "fourth"} {
		if g := rootGets(name, a()); g != 0 {
			t.Fatalf("lone put of %s on the device's root copy read %d roots, want 0", name, g)
		}
	}
	put(b(), "other")
	lost := be.lost.Load()
	put(a(), "fifth") // a's copy is of the root before b's
	if got := be.lost.Load() - lost; got != 1 {
		t.Fatalf("%d refused creates, want 1: the lock-free batch on a's stale copy", got)
	}

	copyPath := rootCopyPath(a().opts.Cache)
	if g := rootGets("sixth", a()); g != 1 { // the put under the lock left no copy: read
		t.Fatalf("lone put after a put under the lock read %d roots, want 1", g)
	}
	b1, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	b1[len(b1)/2] ^= 1
	os.WriteFile(copyPath, b1, 0o600)
	if g := rootGets("seventh", a()); g != 1 {
		t.Fatalf("lone put on a damaged copy read %d roots, want 1", g)
	}
	if g := rootGets("eighth", a()); g != 0 {
		t.Fatalf("the damaged copy was not replaced: %d root reads", g)
	}
	shiftDeviceClock(t, rootCopyFresh+time.Second, rootCopyFresh+time.Second)
	if g := rootGets("ninth", a()); g != 1 {
		t.Fatalf("lone put on a copy older than %v read %d roots, want 1", rootCopyFresh, g)
	}
	c := a()
	for _, name := range []string{"first", "second", "third", "fourth", "other", "fifth", "sixth", "seventh", "eighth", "ninth"} {
		sameFile(t, c, filepath.Join(dir, name), name)
	}
}

// A copy is used only while both clocks say it is fresh: a wall clock set back does not
// make an old copy young, nor does a boot clock that stopped (another boot).
func TestRootCopyAge(t *testing.T) {
	at := devClock{wall: time.Unix(1000, 0), boot: [16]byte{1}, up: time.Hour, ok: true}
	for _, tc := range []struct {
		name  string
		now   devClock
		age   time.Duration
		known bool
	}{
		{"both", devClock{wall: time.Unix(1060, 0), boot: [16]byte{1}, up: time.Hour + time.Minute, ok: true}, time.Minute, true},
		{"slept", devClock{wall: time.Unix(1060, 0), boot: [16]byte{1}, up: 2 * time.Hour, ok: true}, time.Hour, true},
		{"wall set forward", devClock{wall: time.Unix(9000, 0), boot: [16]byte{1}, up: time.Hour, ok: true}, 8000 * time.Second, true},
		{"wall set back", devClock{wall: time.Unix(900, 0), boot: [16]byte{1}, up: time.Hour, ok: true}, 0, false},
		{"another boot", devClock{wall: time.Unix(1001, 0), boot: [16]byte{2}, up: time.Hour + time.Second, ok: true}, 0, false},
		{"no clock", devClock{wall: time.Unix(1001, 0)}, 0, false},
	} {
		age, known := at.since(tc.now)
		if known != tc.known || known && age != tc.age {
			t.Errorf("%s: age %v known %v, want %v %v", tc.name, age, known, tc.age, tc.known)
		}
	}
}

// A lone put that built on a copy goes under the lock when its batch would leave later
// than locklessMaxAge after the copy's moment by the boot clock, even if the wall clock
// was set back meanwhile (loneTooOld).
func TestLoneTooOldByBootClock(t *testing.T) {
	if !deviceNow().ok {
		t.Skip("no boot clock here")
	}
	c := devices(t, newBackend(t))()
	now := deviceNow()
	c.loneClock, c.loneRead = now, now.wall.Round(0)
	if c.loneTooOld() {
		t.Fatal("a moment ago is too old")
	}
	shiftDeviceClock(t, -time.Hour, locklessMaxAge+time.Second)
	if !c.loneTooOld() {
		t.Fatal("a root copy older than locklessMaxAge by the boot clock (wall clock set back) is not too old")
	}
}

// TestRootCopyVectors pins the root copy file (docs/formats/put-cache.md, "The tree root
// copy"): testdata/dupless/root-copy.json.
func TestRootCopyVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dupless", "root-copy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Seq    uint64 `json:"seq"`
		Wall   int64  `json:"wall_unix_ns"`
		Boot   string `json:"boot_id"`
		Up     int64  `json:"boot_clock_ns"`
		Sealed string `json:"root_object"`
		File   string `json:"file"`
		Bad    []struct {
			Why  string `json:"why"`
			File string `json:"file"`
		} `json:"refused"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	rc := rootCopy{seq: v.Seq, at: devClock{wall: time.Unix(0, v.Wall), up: time.Duration(v.Up), ok: true}}
	boot, _ := hex.DecodeString(v.Boot)
	copy(rc.at.boot[:], boot)
	rc.sealed, _ = hex.DecodeString(v.Sealed)
	want, _ := hex.DecodeString(v.File)
	if got := rc.encode(); !bytes.Equal(got, want) {
		t.Fatalf("encode:\n got %x\nwant %x", got, want)
	}
	back, err := decodeRootCopy(want)
	if err != nil || back.seq != rc.seq || !back.at.wall.Equal(rc.at.wall) || back.at.boot != rc.at.boot ||
		back.at.up != rc.at.up || !bytes.Equal(back.sealed, rc.sealed) {
		t.Fatalf("decode: %+v %v", back, err)
	}
	if len(v.Bad) == 0 {
		t.Fatal("no refused vectors")
	}
	for _, bad := range v.Bad {
		b, _ := hex.DecodeString(bad.File)
		if _, err := decodeRootCopy(b); err == nil {
			t.Errorf("%s: decoded", bad.Why)
		}
	}
}

// FuzzDecodeRootCopy: a root copy file of any bytes decodes or is refused, never panics,
// and what decodes encodes back to the same bytes.
func FuzzDecodeRootCopy(f *testing.F) {
	f.Add(rootCopy{seq: 7, at: devClock{wall: time.Unix(5, 0), up: 9, ok: true}, sealed: []byte("root")}.encode())
	f.Add([]byte(rootCopyMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		rc, err := decodeRootCopy(b)
		if err != nil {
			return
		}
		if !bytes.Equal(rc.encode(), b) {
			t.Fatalf("%x decodes but encodes to %x", b, rc.encode())
		}
	})
}
