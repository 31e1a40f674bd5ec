package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// Stat describes dir/name.
func (b *Backend) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	if err := storage.CheckPath(dir, name); err != nil {
		return storage.Info{}, err
	}
	var e storewire.Entry
	if err := b.call(ctx, http.MethodGet, b.url("stat", storage.Join(dir, name), nil), nil, &e); err != nil {
		return storage.Info{}, opErr("stat", storage.Join(dir, name), err)
	}
	return e.Info(), nil
}

func infos(es []storewire.Entry) []storage.Info {
	out := make([]storage.Info, len(es))
	for i, e := range es {
		out[i] = e.Info()
	}
	return out
}

// List returns the entries of dir.
func (b *Backend) List(ctx context.Context, dir string) ([]storage.Info, error) {
	if err := storage.CheckDir(dir); err != nil {
		return nil, err
	}
	var es []storewire.Entry
	if err := b.call(ctx, http.MethodGet, b.url("list", dir, nil), nil, &es); err != nil {
		return nil, opErr("list", strconv.Quote(dir), err)
	}
	return infos(es), nil
}

// Search returns the entries named name in dir or below.
func (b *Backend) Search(ctx context.Context, dir, name string) ([]storage.Info, error) {
	if err := storage.CheckPath(dir, name); err != nil {
		return nil, err
	}
	var es []storewire.Entry
	if err := b.call(ctx, http.MethodGet, b.url("search", dir, url.Values{"name": {name}}), nil, &es); err != nil {
		return nil, opErr("search", strconv.Quote(dir), err)
	}
	return infos(es), nil
}

// Delete removes a file or an empty directory.
func (b *Backend) Delete(ctx context.Context, dir, name string) error {
	if err := storage.CheckPath(dir, name); err != nil {
		return err
	}
	if err := b.call(ctx, http.MethodDelete, b.url("files", storage.Join(dir, name), nil), nil, nil); err != nil {
		return opErr("delete", storage.Join(dir, name), err)
	}
	return nil
}

// Create makes dir and its parents.
func (b *Backend) Create(ctx context.Context, dir string) error {
	if err := storage.CheckDir(dir); err != nil {
		return err
	}
	if err := b.call(ctx, http.MethodPost, b.url("dirs", dir, nil), []byte{}, nil); err != nil {
		return opErr("create", strconv.Quote(dir), err)
	}
	return nil
}

// Move renames a file or a directory tree.
func (b *Backend) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	return b.move(ctx, srcDir, srcName, dstDir, dstName, nil)
}

// MoveMatch renames a file only while its content hashes to match (storage.MatchMover):
// a move body with a match (session 14). A service older than that refuses the body as
// 400 bad_request (an unknown field), moving nothing; the error then wraps
// storage.ErrNoConditions, so the caller can tell "no conditional moves here" from
// "changed" (412, storage.ErrChanged).
func (b *Backend) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	err := b.move(ctx, srcDir, srcName, dstDir, dstName, &match)
	if errors.Is(err, storewire.ErrBadBatch) { // bad_request: the body is well formed (storewire.ReadMove)
		return fmt.Errorf("%w (the service is older than conditional moves): %w", err, storage.ErrNoConditions)
	}
	return err
}

var _ storage.MatchMover = (*Backend)(nil)

func (b *Backend) move(ctx context.Context, srcDir, srcName, dstDir, dstName string, match *[32]byte) error {
	if err := storage.CheckPath(srcDir, srcName); err != nil {
		return err
	}
	if err := storage.CheckPath(dstDir, dstName); err != nil {
		return err
	}
	body, _ := json.Marshal(storewire.NewMoveRequest(srcDir, srcName, dstDir, dstName, match))
	u := b.base.String() + "/" + storewire.Version + "/move"
	if err := b.call(ctx, http.MethodPost, u, body, nil); err != nil {
		return opErr("move", storage.Join(srcDir, srcName)+" to "+storage.Join(dstDir, dstName), err)
	}
	return nil
}
