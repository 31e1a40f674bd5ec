package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer"} {
		if err := Write(p, []byte(content), 0o600, true); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Fatalf("content %q, want %q", b, content)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	os.Symlink(p, filepath.Join(dir, "link"))
	if err := Write(filepath.Join(dir, "link"), []byte("x"), 0o600, true); err == nil {
		t.Fatal("replaced a symlink")
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600, false); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}

func TestIsTemp(t *testing.T) {
	dir := t.TempDir()
	f, err := os.CreateTemp(dir, ".b000001"+tempMark+"*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if name := filepath.Base(f.Name()); !IsTemp(name) {
		t.Fatalf("IsTemp(%q) = false for Write's own pattern", name)
	}
	for _, name := range []string{"b000001", "super", ".tmp", ".x.tmp", ".x.tmpa1", "x.tmp12", ".hidden", "osync.key"} {
		if IsTemp(name) {
			t.Errorf("IsTemp(%q) = true", name)
		}
	}
}

func TestMkdirAll(t *testing.T) {
	base := t.TempDir()
	p := filepath.Join(base, "a", "b", "c")
	for range 2 { // and again: existing is fine
		if err := MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%v %v", fi, err)
	}
	f := filepath.Join(base, "file")
	os.WriteFile(f, nil, 0o600)
	if err := MkdirAll(f, 0o700); err == nil {
		t.Fatal("a file taken for a directory")
	}
	if err := MkdirAll(filepath.Join(f, "x"), 0o700); err == nil {
		t.Fatal("a directory made below a file")
	}
}
