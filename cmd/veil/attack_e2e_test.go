package main

import (
	"context"
	"github.com/veil-project/veil/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/profile"
	"github.com/veil-project/veil/internal/storage"
)

// Attacks a malicious storage service can play through the store API with the victim's
// own objects, against the real binary and a real 'veil serve'.

// objectsOf opens the user's namespace on the storage service without encryption, as the
// service (or anyone with the user's store credential) sees it.
func (u *user) objects(t *testing.T) storage.Backend {
	t.Helper()
	be, err := profile.OpenStorage(context.Background(), u.config, profile.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	return be
}

func TestE2EServiceDowngradesChunkScheme(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "secret.bin"), 5000, 1)
	alice.mustRun(t, "put", filepath.Join(src, "secret.bin"))
	be := alice.objects(t)
	ctx := context.Background()
	prefixes, err := be.List(ctx, ".veil/chunks")
	if err != nil || len(prefixes) != 1 {
		t.Fatalf("chunk directories: %v %v", prefixes, err)
	}
	dir := ".veil/chunks/" + prefixes[0].Name
	objs, err := be.List(ctx, dir)
	if err != nil || len(objs) != 1 {
		t.Fatalf("chunks: %v %v", objs, err)
	}
	ct := testutil.GetObject(t, be, dir, objs[0].Name)
	ct[1] = 0x02 // HCE2 -> HCE1
	ct[2] ^= 0xff
	testutil.PutObject(t, be, dir, objs[0].Name, ct)
	out := filepath.Join(t.TempDir(), "secret.bin")
	_, errs, code := alice.run(t, "get", "secret.bin", out)
	if code == 0 || !strings.Contains(errs, "integrity check failed") {
		t.Fatalf("get of a downgraded chunk: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the altered file reached its destination")
	}
}

func TestE2EWrongKeyReadsFail(t *testing.T) {
	d := startServe(t, "alice", "bob")
	alice := d.newUser(t, "alice")
	// The same storage account, another key: alice's profile with bob's key file (a second
	// 'veil init' from one invitation is refused since init claims the location:
	// TestE2ESecondInitFromOneInvitation).
	bob := d.newUser(t, "bob")
	other := &user{name: "alice", config: filepath.Join(t.TempDir(), "profile"), passFile: bob.passFile}
	if out, err := exec.Command("cp", "-a", alice.config, other.config).CombinedOutput(); err != nil {
		t.Fatalf("copy the profile: %v: %s", err, out)
	}
	kf, err := os.ReadFile(filepath.Join(bob.config, profile.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other.config, profile.KeyFile), kf, 0o600); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "f.bin"), 3000, 1)
	alice.mustRun(t, "put", filepath.Join(src, "f.bin"))
	for _, args := range [][]string{{"get", "/", t.TempDir()}, {"ls"}, {"find", "f.bin"}} {
		_, errs, code := other.run(t, args...)
		if code == 0 || !strings.Contains(errs, "belongs to another veil key") {
			t.Errorf("veil %s with another key: exit %d, stderr %q", strings.Join(args, " "), code, errs)
		}
	}
}

func TestE2EServiceRollsBackARecord(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "doc.txt"), []byte("balance: 100"), 0o644)
	alice.mustRun(t, "put", filepath.Join(src, "doc.txt"))
	be := alice.objects(t)
	infos, err := be.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var rec string
	for _, i := range infos {
		if strings.HasSuffix(i.Name, ".key") {
			rec = i.Name
		}
	}
	old := testutil.GetObject(t, be, "", rec)
	os.WriteFile(filepath.Join(src, "doc.txt"), []byte("balance: 0, account closed"), 0o644)
	alice.mustRun(t, "put", filepath.Join(src, "doc.txt"))
	testutil.PutObject(t, be, "", rec, old)
	_, errs, code := alice.run(t, "get", "doc.txt", filepath.Join(t.TempDir(), "doc.txt"))
	if code == 0 || !strings.Contains(errs, "tree root") {
		t.Fatalf("get of a rolled-back record: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := alice.run(t, "ls", "-l"); code == 0 || !strings.Contains(errs, "failed verification") {
		t.Fatalf("ls with a rolled-back record: exit %d, stderr %q", code, errs)
	}
	// The explicit flag reads it anyway, with a warning.
	out := filepath.Join(t.TempDir(), "doc.txt")
	_, errs, code = alice.run(t, "get", "--no-root-check", "doc.txt", out)
	if b, _ := os.ReadFile(out); code != 0 || string(b) != "balance: 100" || !strings.Contains(errs, "tree root") {
		t.Fatalf("--no-root-check: exit %d, %q, stderr %q", code, b, errs)
	}
}
