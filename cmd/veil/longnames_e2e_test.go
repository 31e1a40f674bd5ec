package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Names of 255 bytes (the local file systems' limit) round-trip: a folder and a file in it,
// through put, ls, find, get, mv (file and folder), check, log, cat --version, rm, and ls and
// get of a snapshot after the rm; a 256-byte name is
// refused with one line.
func TestE2ELongNames(t *testing.T) {
	u := localUser(t, "alice")
	dirName := strings.Repeat("d", 255)
	fileName := strings.Repeat("é", 127) + "f" // 255 bytes, multi-byte
	src := t.TempDir()
	want := randomFile(t, filepath.Join(src, dirName, fileName), 70_000, 7)
	u.mustRun(t, "put", "-q", filepath.Join(src, dirName))
	if out := u.mustRun(t, "ls", dirName); strings.TrimSpace(out) != fileName {
		t.Fatalf("ls: %q", out)
	}
	if out := u.mustRun(t, "find", fileName); strings.TrimSpace(out) != dirName+"/"+fileName {
		t.Fatalf("find: %q", out)
	}
	dest := t.TempDir()
	u.mustRun(t, "get", "-q", dirName, dest)
	if got, err := os.ReadFile(filepath.Join(dest, dirName, fileName)); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("get of the folder: %d bytes, %v", len(got), err)
	}
	moved := strings.Repeat("m", 255)
	u.mustRun(t, "mv", dirName+"/"+fileName, dirName+"/"+moved)
	if got := u.mustRun(t, "cat", dirName+"/"+moved); got != string(want) {
		t.Fatalf("cat after mv: %d bytes", len(got))
	}
	u.mustRun(t, "check", "--read-data")
	if out := u.mustRun(t, "log", dirName+"/"+fileName); strings.Count(out, "\n") < 2 || !strings.Contains(out, "deleted") {
		t.Fatalf("log: %q", out)
	}
	if got := u.mustRun(t, "cat", "--version", "1", dirName+"/"+fileName); got != string(want) {
		t.Fatalf("cat --version 1: %d bytes", len(got))
	}
	dir2 := strings.Repeat("z", 255)
	u.mustRun(t, "mv", dirName, dir2)
	if out := u.mustRun(t, "ls", dir2); strings.TrimSpace(out) != moved {
		t.Fatalf("ls after mv of the folder: %q", out)
	}
	u.mustRun(t, "rm", "-r", dir2)
	if out := u.mustRun(t, "ls"); strings.TrimSpace(out) != "" {
		t.Fatalf("ls after rm: %q", out)
	}
	u.mustRun(t, "snapshots")
	if out := u.mustRun(t, "ls", "--snapshot", "1", dirName); strings.TrimSpace(out) != fileName {
		t.Fatalf("ls --snapshot 1: %q", out)
	}
	old := t.TempDir()
	u.mustRun(t, "get", "-q", "--snapshot", "1", dirName+"/"+fileName, filepath.Join(old, "f"))
	if got, err := os.ReadFile(filepath.Join(old, "f")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("get --snapshot 1: %d bytes, %v", len(got), err)
	}
	u.mustRun(t, "check")
	errs := u.mustFail(t, "mkdir", strings.Repeat("x", 256))
	t.Logf("256 bytes: %s", errs)
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "name longer than 255 bytes") {
		t.Fatalf("256-byte name: %q", errs)
	}
}
