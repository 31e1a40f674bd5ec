package dupless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// A local folder put finds stored as a file (or symlink) of the same name fails, and
// nothing below it is stored: a stored file and a stored folder never share a name
// (names_clash.go). Put checks a folder while its files are already being read (a put
// creates its parents: walk order is not commit order), so each folder of the run has a
// gate its entries wait on before they store anything. Found by review: put reported the
// folder failed and stored what it holds below the file all the same.

// errUnderClash is the outcome of an entry below a folder put refused (clashError): not
// stored, and not reported on its own, since the folder's one error says why.
var errUnderClash = errors.New("not stored: a folder above it is stored as a file")

// clashError is a local folder whose destination is stored as a file or symlink.
func clashError(dest string) error {
	return fmt.Errorf("%s is stored as a file: a folder cannot have its name, and nothing below it was stored ('veil rm %s' and put again, or 'veil sync', which replaces what changed kind)", dest, dest)
}

// dirGate opens once put has checked its folder: err is errUnderClash when the folder
// (or one above it) is not stored, else nil (or the run's cancellation).
type dirGate struct {
	done chan struct{}
	once sync.Once
	err  error
}

func (g *dirGate) open(err error) {
	g.once.Do(func() { g.err = err; close(g.done) })
}

// wait blocks until the gate opens; a nil gate (no folder of this run above) is open.
func (g *dirGate) wait(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dirGates are the gates of a run's folders, by destination.
type dirGates map[string]*dirGate

// assign gives t the gate of the folder it is in (if this run stores that folder) and,
// for a folder, its own. Tasks come in walk order: a folder before what it holds.
func (gs dirGates) assign(t *putTask) {
	parent, _ := storage.Split(t.dest)
	t.above = gs[parent]
	if t.info.IsDir() {
		t.own = &dirGate{done: make(chan struct{})}
		gs[t.dest] = t.own
	}
}

// cannotStore reports whether a local entry of mode m carries nothing put can store (a
// socket, or a kind Go does not know): put skips it, counted in Summary.NotStored, as
// restic and rsync do; it is no failure, so sync still removes what is gone.
func cannotStore(m fs.FileMode) bool {
	return !m.IsRegular() && !m.IsDir() && m&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeDevice) == 0
}
