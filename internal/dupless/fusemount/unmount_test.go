package fusemount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/local"
)

// Ctrl-C ends the mount while a file in it is open (a shell's working folder, a viewer):
// the busy mount is detached lazily. Found by review: the unmount failed (EBUSY), Run
// logged it and went on serving, so 'veil mount' ignored Ctrl-C until every file closed.
func TestMountEndsWithFileOpen(t *testing.T) {
	be, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "file"), []byte("open while unmounting"), 0o644)
	m := startMount(t, be, src)
	f, err := os.Open(filepath.Join(m.dir, "current", "src", "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m.stop()
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the mount did not end within 20 s of its context, with a file open")
	}
	if info, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(info), " "+m.dir+" ") {
		t.Errorf("%s is still mounted after Run returned", m.dir)
	}
}
