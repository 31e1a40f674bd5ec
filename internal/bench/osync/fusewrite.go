package osbench

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/veil-project/veil/internal/oblivisync"
	"github.com/veil-project/veil/internal/oblivisync/fusefs"
)

// FuseWrite mounts a fresh backend read-write in this process and writes total bytes
// sequentially through the mount with writes of each size in sizes, timing how fast the
// frontend accepts data into the buffer (fsync of the journal included at close).
func FuseWrite(c Config, total int64, sizes []int, emit func(Row)) error {
	dir, err := os.MkdirTemp(c.Dir, "osbench-fuse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	be, mnt := filepath.Join(dir, "be"), filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	const b = 1 << 20 // the paper's B; the backend is sparse, so its size costs nothing
	files := int(2*total*int64(len(sizes))/b) + 2
	p := oblivisync.Params{Files: files, FileSize: b, K: 3, DripTime: time.Second}
	if err := oblivisync.Init(be, pass, p, cheapKDF); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- fusefs.Run(ctx, fusefs.Config{Backend: be, Mountpoint: mnt, Passphrase: pass, DrainTimeout: time.Millisecond,
			Writer: oblivisync.Options{StateDir: filepath.Join(dir, "state")}, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return err
	}
	var werr error
	for i, bs := range sizes {
		buf := make([]byte, bs)
		for j := range buf {
			buf[j] = byte(j * 31)
		}
		f, err := os.Create(filepath.Join(mnt, "w"+itoa(i)))
		if err != nil {
			werr = err
			break
		}
		start := time.Now()
		for n := int64(0); n < total && err == nil; n += int64(bs) {
			_, err = f.Write(buf)
		}
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		el := time.Since(start)
		if err != nil {
			werr = err
			break
		}
		emit(Row{"experiment": "fuse_write", "write_size": bs, "mb": float64(total) / (1 << 20),
			"seconds": el.Seconds(), "mb_per_s": float64(total) / (1 << 20) / el.Seconds()})
	}
	cancel()
	<-done // the drain times out at once: this measures intake, not sync
	return werr
}
