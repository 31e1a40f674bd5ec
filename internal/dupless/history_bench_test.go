package dupless

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// BenchmarkPutChangedFileRequests: storage requests of one 'veil put' of a changed 1 KiB
// file (a command per change): with history, the replaced record is kept (one more PUT).
func BenchmarkPutChangedFileRequests(b *testing.B) {
	be := &countingBE{Backend: newBackendB(b)}
	master := NewMasterKey()
	p := filepath.Join(b.TempDir(), "f")
	for i := 0; i <= b.N; i++ {
		writeB(b, p, randBytes(1024, uint64(i)))
		os.Chtimes(p, time.Now(), time.Unix(int64(1000+i), 0))
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			b.Fatal(err)
		}
		before := be.n.Load()
		if _, err := c.Put(context.Background(), []string{p}, ""); err != nil {
			b.Fatal(err)
		}
		if i > 0 { // the first put creates the file
			b.ReportMetric(float64(be.n.Load()-before), "requests/put")
		}
		c.Close()
	}
}
