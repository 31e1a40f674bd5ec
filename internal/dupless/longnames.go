package dupless

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// Long names (docs/formats/key-record.md and docs/design.md, "Long names"). A name longer
// than MaxNameLen does not fit the storage service's 255-byte limit once encrypted, so it
// is stored under its tag: "~" and the base64url HMAC-SHA256 of the name (a key of its
// own). "~" is outside base64url's alphabet, so a tag never equals an ordinary encrypted
// name, and a veil that predates long names skips it as not its own. The name itself is
// kept, encrypted deterministically with the name key (AD longNameAD), in the name object
// .veil/names/<tag>: one per distinct name, shared by every directory that holds the name. Every command that writes under the tag
// writes it (again) first, as a put sends its chunks again, and 'veil prune' removes it
// once no stored path and no retained snapshot holds the tag and it is older than prune's
// grace (prunenames.go). Reading one checks that the HMAC of the decrypted name equals the
// tag, so a name object cannot be swapped for another.

const (
	longTagPrefix = "~"
	namesDir      = veilDir + "/names"
)

var longNameAD = []byte("veil/v1 long name")

// ErrLongNameMissing reports a long name whose name object is missing or not authentic.
var ErrLongNameMissing = errors.New("the name object of a long name is missing or not authentic")

func isLongTag(enc string) bool { return strings.HasPrefix(enc, longTagPrefix) }

// longNameErr is ErrLongNameMissing for the name object of tag, which it names as the
// object an operator looks for (.veil/names/~...), after the reason: the caller puts the
// user's path (the folder that holds the entry) in front.
func longNameErr(tag, detail string) error {
	if detail != "" {
		detail = ": " + detail
	}
	return fmt.Errorf("%w (%s/%s%s)", ErrLongNameMissing, namesDir, tag, detail)
}

// longNames caches long names by tag; load fetches a name object not yet cached.
type longNames struct {
	mu     sync.Mutex
	names  map[string]string
	stored map[string]bool        // name objects this command wrote (storeLongNames)
	load   func(tag string) error // fetches, verifies and caches a name object
}

func newLongNames() *longNames {
	return &longNames{names: map[string]string{}, stored: map[string]bool{}}
}

// longTag returns the tag of a long name and remembers the name.
func (k *userKeys) longTag(name string) string {
	m := hmac.New(sha256.New, k.longMAC)
	m.Write([]byte(name))
	tag := longTagPrefix + b64.EncodeToString(m.Sum(nil))
	k.long.mu.Lock()
	k.long.names[tag] = name
	k.long.mu.Unlock()
	return tag
}

// name returns the long name of tag, fetching and verifying its name object if needed.
func (l *longNames) name(tag string) (string, error) {
	l.mu.Lock()
	n, ok := l.names[tag]
	load := l.load
	l.mu.Unlock()
	if ok {
		return n, nil
	}
	if load == nil {
		return "", errForeignName
	}
	if err := load(tag); err != nil {
		return "", err
	}
	l.mu.Lock()
	n, ok = l.names[tag]
	l.mu.Unlock()
	if !ok {
		return "", longNameErr(tag, "")
	}
	return n, nil
}

// sealLongName is the name object of a long name.
func (k *userKeys) sealLongName(name string) ([]byte, error) {
	c, err := k.names.EncryptDeterministically([]byte(name), longNameAD)
	if err != nil {
		return nil, err
	}
	return append([]byte{longNameVersion}, c...), nil
}

const longNameVersion = 1

// openLongName verifies a name object against its tag and caches the name.
func (k *userKeys) openLongName(tag string, b []byte) (string, error) {
	if len(b) < 1 || b[0] != longNameVersion {
		return "", longNameErr(tag, "unknown version")
	}
	p, err := k.names.DecryptDeterministically(b[1:], longNameAD)
	if err != nil {
		return "", longNameErr(tag, "")
	}
	name := string(p)
	if len(name) <= MaxNameLen || len(name) > MaxLongNameLen || k.longTag(name) != tag {
		return "", longNameErr(tag, "name does not match the tag")
	}
	return name, nil
}

// loadLongName is the loader of the client's long names.
func (c *Client) loadLongName(tag string) error {
	return c.loadLongNameCtx(context.Background(), tag)
}

// preloadLongName fetches, with ctx, the name object of the listed entry enc (a
// directory's or a record's name) if it is a long name not yet cached, so that a walk or a
// listing that then decrypts it ends with its context (decName's loader cannot).
func (c *Client) preloadLongName(ctx context.Context, enc string) error {
	tag, _ := cutSuffix(enc, keySuffix)
	if !isLongTag(tag) {
		return nil
	}
	l := c.keys.long
	l.mu.Lock()
	_, ok := l.names[tag]
	l.mu.Unlock()
	if ok {
		return nil
	}
	return c.loadLongNameCtx(ctx, tag)
}

func (c *Client) loadLongNameCtx(ctx context.Context, tag string) error {
	b, err := c.getObject(ctx, namesDir, tag)
	if errors.Is(err, storage.ErrNotFound) {
		return longNameErr(tag, "")
	}
	if err != nil {
		return err
	}
	_, err = c.keys.openLongName(tag, b)
	return err
}

// nameObjects returns the name object of every long name on a storage path, once each.
func (k *userKeys) nameObjects(path string) ([]storage.Object, error) {
	var out []storage.Object
	for _, part := range strings.Split(path, "/") {
		tag, _ := cutSuffix(part, keySuffix)
		if !isLongTag(tag) || slices.ContainsFunc(out, func(o storage.Object) bool { return o.Name == tag }) {
			continue
		}
		k.long.mu.Lock()
		name, known := k.long.names[tag]
		k.long.mu.Unlock()
		if !known {
			return nil, longNameErr(tag, "")
		}
		b, err := k.sealLongName(name)
		if err != nil {
			return nil, err
		}
		out = append(out, storage.Object{Dir: namesDir, Name: tag, Data: b})
	}
	return out, nil
}

// storeLongNames writes the name object of every long name on a storage path about to be
// written, unless this command wrote it already. It is written even when it exists: its
// time then says when a command last used it, which prune's grace judges (prunenames.go);
// a put that skipped an existing one could point a record at one prune is deleting.
func (c *Client) storeLongNames(ctx context.Context, path string) error {
	objs, err := c.keys.nameObjects(path)
	if err != nil {
		return err
	}
	l := c.keys.long
	for _, o := range objs {
		l.mu.Lock()
		done := l.stored[o.Name]
		l.mu.Unlock()
		if done {
			continue
		}
		if err := retry(ctx, func() error { return c.be.Put(ctx, o.Dir, o.Name, bytesReader(o.Data), int64(len(o.Data))) }); err != nil {
			return err
		}
		l.mu.Lock()
		l.stored[o.Name] = true
		l.mu.Unlock()
	}
	return nil
}

// forgetStoredNames starts a command that changes the namespace: the name objects an
// earlier command of this client wrote may have been pruned since, so each is written
// again before anything under its tag.
func (l *longNames) forgetStoredNames() {
	l.mu.Lock()
	l.stored = map[string]bool{}
	l.mu.Unlock()
}
