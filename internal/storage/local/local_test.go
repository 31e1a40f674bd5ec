package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/storage/storagetest"
	"github.com/veil-project/veil/internal/testutil"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		b, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// TestStaleTempsRemoved checks that temporary files of a crashed Put are removed on open and
// never listed.
func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, local.TempDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, local.TempDirName, "put-123")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp survived: %v", err)
	}
	infos, err := b.List(t.Context(), "")
	if err != nil || len(infos) != 0 {
		t.Fatalf("root lists %+v, %v", infos, err)
	}
}

// TestConformanceWithoutHardLinks runs the conformance suite on a file system that
// refuses link(2), as vfat and exFAT (USB disks, SD cards) and many network file systems
// do: a batch's created objects (a new tree root) were linked into place, and every
// conditional batch failed there with "operation not permitted" (found by review, session
// 17). They are now renamed into place without replacing, under the commit lock.
func TestConformanceWithoutHardLinks(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		mnt := filepath.Join(t.TempDir(), "mnt")
		testutil.MountWithoutHardLinks(t, t.TempDir(), mnt)
		probe := filepath.Join(mnt, "probe")
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(probe, probe+"2"); err == nil {
			t.Fatal("the view allows hard links")
		}
		if err := os.Remove(probe); err != nil {
			t.Fatal(err)
		}
		b, err := local.New(mnt)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
