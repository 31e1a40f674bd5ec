package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage/remote"
)

// crashDropBE is the storage service's client whose process dies, once armed, just after
// rm moved a record aside (dropAside): the delete of the -drop- object is never sent.
type crashDropBE struct {
	*remote.Backend
	armed, crashed bool
}

var errCrashed = errors.New("the process died here")

func (b *crashDropBE) Delete(ctx context.Context, dir, name string) error {
	if b.armed && strings.Contains(name, "-drop-") {
		b.armed, b.crashed = false, true
		return errCrashed
	}
	return b.Backend.Delete(ctx, dir, name)
}

// A crash between rm's conditional move aside (.veil/versions/<hh>/<h>-drop-<r>) and the
// delete of the object moved there leaves it in .veil/versions under a name no snapshot
// lists: prune keeps it for the grace period, as any young kept version, and then deletes
// it; what the snapshots list still reads and checks.
func TestRemoveCrashLeavesDropObjectPruneDeletesIt(t *testing.T) {
	rs := serveCounting(t, false)
	be := &crashDropBE{Backend: rs.be}
	device := memDevices(t, be)
	a := device()
	dir := t.TempDir()
	fa, fg := filepath.Join(dir, "a", "f"), filepath.Join(dir, "a", "g")
	write(t, fa, randBytes(3000, 71))
	write(t, fg, randBytes(3000, 72))
	c := a()
	mustPut(t, c, fa, "")
	mustPut(t, c, fg, "")
	if err := c.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	encDir, encName, err := c.encFile("f")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rs.ns.Get(ctx, encDir, encName+keySuffix)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(rec)
	vd, vn := versionLocation(h)
	// A command stopped after keeping this version: rm takes the record aside.
	if err := rs.ns.Put(ctx, vd, vn, bytes.NewReader(rec), int64(len(rec))); err != nil {
		t.Fatal(err)
	}
	be.armed = true
	if _, err := a().Remove(ctx, "f", false); !errors.Is(err, errCrashed) {
		t.Fatalf("rm that dies after its move aside: %v", err)
	}
	if !be.crashed {
		t.Fatal("rm never moved the record aside")
	}
	drops := func() (out []string) {
		for _, p := range rs.kept(t) {
			if strings.Contains(p, "-drop-") {
				out = append(out, p)
			}
		}
		return out
	}
	if d := drops(); len(d) != 1 || !strings.HasPrefix(d[0], vd+"/"+vn+"-drop-") {
		t.Fatalf("objects left aside by the crash: %v, want one beside %s/%s", d, vd, vn)
	}
	if _, err := a().Remove(ctx, "f", false); err != nil { // run again after the crash
		t.Fatalf("rm again after the crash: %v", err)
	}
	if res, err := a().Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check with an object left aside: %+v %v", res, err)
	}
	if pr, err := a().Prune(ctx, DefaultGrace, false); err != nil || len(drops()) != 1 {
		t.Fatalf("prune within the grace period: %+v %v; left aside: %v, want it kept", pr, err, drops())
	}
	pr, err := a().Prune(ctx, 0, false)
	if err != nil || len(drops()) != 0 || pr.VersionsRemoved == 0 {
		t.Fatalf("prune after the grace period: %+v %v; left aside: %v, want it deleted", pr, err, drops())
	}
	sameFile(t, a(), fg, "g")
	if res, err := a().Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check after the crash and prune: %+v %v", res, err)
	}
}
