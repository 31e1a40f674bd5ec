package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veil-project/veil/internal/testutil"
)

// cluster is DupLESS on several nodes, as docs/deploy.md describes: two 'veil store serve'
// nodes sharing PostgreSQL and an S3 bucket (versitygw), two 'veil keyserver serve'
// replicas sharing rate-limit state in Redis.
type cluster struct {
	db, storeDir     string
	stores, ks       []*testutil.Process
	storeAddrs, kses []string
	creds            map[string][2]string // user -> store credential, key server credential
}

func startCluster(t *testing.T, users ...string) *cluster {
	t.Helper()
	pg, s3, redis := testutil.StartPostgres(t), testutil.StartS3(t), testutil.StartRedis(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
	run := func(args ...string) {
		t.Helper()
		if out, err := execVeil(args...); err != nil {
			t.Fatalf("veil %v: %v\n%s", args, err, out)
		}
	}
	root := t.TempDir()
	c := &cluster{db: pg.NewSchema(t), storeDir: filepath.Join(root, "store1"), creds: map[string][2]string{}}
	run("store", "init", "--dir", c.storeDir, "--db", c.db, "--blobs", "s3://"+s3.Endpoint+"/veil-blobs?tls=0&create=1")
	ksDir := filepath.Join(root, "ks1")
	c.kses = []string{testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))}
	run("keyserver", "init", "--dir", ksDir, "--url", "https://"+c.kses[0])
	for _, u := range users {
		sc, kc := filepath.Join(root, u+".store.cred"), filepath.Join(root, u+".ks.cred")
		run("store", "user", "add", u, "--dir", c.storeDir, "--out", sc)
		run("keyserver", "client", "add", u, "--dir", ksDir, "--out", kc)
		c.creds[u] = [2]string{sc, kc}
	}
	for i := range 2 { // every further node serves a copy of the first one's directory
		sd, kd := c.storeDir, ksDir
		if i > 0 {
			sd, kd = filepath.Join(root, "store2"), filepath.Join(root, "ks2")
			for _, cp := range [][2]string{{c.storeDir, sd}, {ksDir, kd}} {
				if err := os.CopyFS(cp[1], os.DirFS(cp[0])); err != nil {
					t.Fatal(err)
				}
			}
		}
		addr := testutil.Addr(testutil.FreePort(t))
		c.storeAddrs = append(c.storeAddrs, addr)
		c.stores = append(c.stores, testutil.Start(t, veilBin, "store", "serve", "--dir", sd, "--listen", addr))
		c.ks = append(c.ks, testutil.Start(t, veilBin, "keyserver", "serve", "--dir", kd, "--https", c.kses[i],
			"--udp", testutil.Addr(testutil.FreePort(t)), "--ratelimit-store", redis))
		testutil.WaitTCP(t, addr, 20*time.Second)
		testutil.WaitTCP(t, c.kses[i], 20*time.Second)
	}
	return c
}

// newUser makes a profile that lists both store nodes and both key server replicas.
func (c *cluster) newUser(t *testing.T, name string) *user {
	return newUser(t, name, "--storage", fmt.Sprintf("veil://%s,%s", c.storeAddrs[0], c.storeAddrs[1]),
		"--store-credential", c.creds[name][0], "--ks-credential", c.creds[name][1],
		"--ks-url", "https://"+c.kses[0], "--ks-url", "https://"+c.kses[1])
}

// names counts the names the store holds (a query on its PostgreSQL database).
func (c *cluster) names(t *testing.T) int {
	conn, err := pgx.Connect(context.Background(), c.db)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer conn.Close(context.Background())
	var n int
	conn.QueryRow(context.Background(), `SELECT count(*) FROM veil_entries`).Scan(&n)
	return n
}

// overlappingTrees writes two users' trees: shared files (same bytes in both), and each
// user's own; small files (inline in the database) and larger ones (in S3).
func overlappingTrees(t *testing.T, n int) (string, string) {
	a, b := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(b, "t"), 0o755)
	for i := range n {
		size := 1500 + i*37
		if i%10 == 0 {
			size = 90_000 + i*100 // above the inline limit: content in S3
		}
		shared := randomFile(t, filepath.Join(a, "t", fmt.Sprintf("s%03d", i)), size, byte(i))
		if err := os.WriteFile(filepath.Join(b, "t", fmt.Sprintf("s%03d", i)), shared, 0o644); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			randomFile(t, filepath.Join(a, "t", fmt.Sprintf("a%03d", i)), size, byte(i+101))
			randomFile(t, filepath.Join(b, "t", fmt.Sprintf("b%03d", i)), size, byte(i+157))
		}
	}
	return a, b
}

// TestE2EMultiNode runs DupLESS across two store nodes and two key server replicas:
// alice and bob put overlapping trees at the same time through profiles listing every
// node; once the store holds 150 names, one store node and one key server replica are
// SIGKILLed. Both puts complete (every file deduplicated: derivations fail over to the
// surviving replica), every file reads back, and the store keeps the shared content once,
// as the same two puts into one bbolt node do.
func TestE2EMultiNode(t *testing.T) {
	c := startCluster(t, "alice", "bob")
	alice, bob := c.newUser(t, "alice"), c.newUser(t, "bob")
	srcA, srcB := overlappingTrees(t, 200)
	done := make(chan struct{})
	killed := make(chan bool, 1)
	go func() {
		for c.names(t) < 150 {
			select {
			case <-done:
				killed <- false
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		c.stores[0].Kill()
		c.ks[0].Kill()
		killed <- true
	}()
	var wg sync.WaitGroup
	sums := make([]map[string]any, 2)
	for i, u := range []*user{alice, bob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = u.summary(t, "put", "-j", "4", filepath.Join([]string{srcA, srcB}[i], "t"))
		}()
	}
	wg.Wait()
	close(done)
	if !<-killed {
		t.Fatal("the puts ended before the store held 150 names: nothing was killed mid-put")
	}
	for i, s := range sums {
		if fb, _ := s["fallback_files"].(float64); fb != 0 {
			t.Errorf("user %d: %v files stored without dedup: the key server failover did not happen", i, fb)
		}
	}
	for i, u := range []*user{alice, bob} {
		out := t.TempDir()
		u.mustRun(t, "get", "t", filepath.Join(out, "t"))
		diffTrees(t, filepath.Join([]string{srcA, srcB}[i], "t"), filepath.Join(out, "t"))
	}
	multi := storeStats(t, "--url", "https://"+c.storeAddrs[1], "--credential", filepath.Join(c.storeDir, "admin.cred"))
	// The same two puts into one bbolt node (no kill): the physical bytes to match.
	single := startServe(t, "alice", "bob")
	a1, b1 := single.newUser(t, "alice"), single.newUser(t, "bob")
	a1.summary(t, "put", filepath.Join(srcA, "t"))
	b1.summary(t, "put", filepath.Join(srcB, "t"))
	one := single.stats(t)
	// Each distinct content is kept once in both: the same number of blobs, and the live
	// physical bytes differ only by what the users' own records differ by (a few bytes of
	// metadata records, seen as the same difference in logical bytes), never by a copy.
	live := func(s map[string]float64) float64 { return s["physical_bytes"] - s["garbage_bytes"] }
	dp, dl := live(multi)-live(one), multi["logical_bytes"]-one["logical_bytes"]
	if multi["blobs"]-multi["garbage_blobs"] != one["blobs"]-one["garbage_blobs"] || dp != dl || dp > 4096 || dp < -4096 {
		t.Fatalf("two nodes keep %v live physical bytes, one node %v (logical differ by %v)\n%v\n%v", live(multi), live(one), dl, multi, one)
	}
	t.Logf("live physical bytes: two nodes %v, one node %v; blobs %v", live(multi), live(one), multi["blobs"])
}

func storeStats(t *testing.T, args ...string) map[string]float64 {
	t.Helper()
	out, err := execVeil(append([]string{"store", "stats", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("store stats: %v\n%s", err, out)
	}
	var m map[string]float64
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("store stats: %v: %s", err, out)
	}
	return m
}
