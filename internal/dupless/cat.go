package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// Cat writes the content of the stored file path to w. Each chunk is verified (record
// authentication, ciphertext hash, guarded decryption) before any of its bytes are
// written; a chunk that fails stops the output with an error, so w may hold a verified
// prefix of the file but never an unverified byte.
func (c *Client) Cat(ctx context.Context, path string, w io.Writer) error {
	folderOnly := strings.HasSuffix(path, "/")
	path = cleanPath(path)
	if err := c.refresh(ctx); err != nil {
		return err
	}
	if path == "" {
		return errors.New("/ is a directory: cat prints files")
	}
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return err
	}
	r, err := c.readRecord(ctx, encDir, encName+keySuffix)
	if errors.Is(err, storage.ErrNotFound) {
		if err := c.missing(storage.Join(encDir, encName+keySuffix)); err != nil {
			return err
		}
		if kind, kerr := c.kindOf(ctx, path); kerr == nil && kind == typeDir {
			return fmt.Errorf("%s is a directory: cat prints files ('veil get %s DEST' retrieves it)", path, path)
		}
		return fmt.Errorf("%s: %w", path, storage.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if folderOnly {
		return fileWithSlash(path) // NAME/ is a folder, as rm and ls take it
	}
	switch r.Type {
	case typeFile:
		if err := c.fetchChunks(ctx, r, w); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	case typeSymlink:
		return fmt.Errorf("%s is a symlink (to %s): cat prints files", path, r.Target)
	case typeSpecial:
		return fmt.Errorf("%s is a %s: cat prints files ('veil get %s DEST' recreates it)", path, specialKind(r.Mode), path)
	}
	return fmt.Errorf("%s: %w: record type %d where a file was expected", path, ErrRecord, r.Type)
}
