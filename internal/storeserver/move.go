package storeserver

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
)

// Move renames a file or a directory with everything below it, in one transaction. Every
// new path is checked against the limits, and the metadata bytes it adds (a longer
// prefix on every moved name) count against the quota: the work is O(the moved tree),
// which the quota bounds.
func (n *Namespace) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	lim := n.s.cfg.Limits
	if err := lim.checkPath(srcDir, srcName); err != nil {
		return err
	}
	if err := lim.checkPath(dstDir, dstName); err != nil {
		return err
	}
	src, dst := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	// Group commit (commit.go): concurrent moves, such as a client's mv or rm -r of many
	// records, share one fsync; the function changes nothing outside its transaction.
	err := n.s.commit.do(func(tx *bolt.Tx) error {
		b, e, err := n.lookup(tx, srcDir, srcName)
		if err != nil {
			return err
		}
		if _, ok, _ := getEntry(b, dstDir, dstName); ok {
			return storage.ErrExists
		}
		if e.isDir() && strings.HasPrefix(dst+"/", src+"/") {
			return fmt.Errorf("%w: a directory cannot move into itself", storage.ErrInvalidName)
		}
		if err := n.ensureDirs(tx, b, dstDir, time.Now().UnixNano()); err != nil {
			return err
		}
		moves := [][2][]byte{{nsKey(srcDir, srcName), nsKey(dstDir, dstName)}}
		if e.isDir() {
			if moves, err = n.subtreeMoves(b, src, dst, moves); err != nil {
				return err
			}
		}
		for _, m := range moves {
			v := bytes.Clone(b.Get(m[0]))
			if err := b.Delete(m[0]); err != nil {
				return err
			}
			if err := b.Put(m[1], v); err != nil {
				return err
			}
		}
		return n.moveAccounting(tx, srcDir, srcName, dstDir, dstName, e.isDir(), int64(len(moves)-1))
	})
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", src, dst, err)
	}
	n.s.metrics.ops.WithLabelValues("move").Inc()
	return nil
}

// subtreeMoves appends the key changes of everything below directory src, each new path
// checked against the limits.
func (n *Namespace) subtreeMoves(b *bolt.Bucket, src, dst string, moves [][2][]byte) ([][2][]byte, error) {
	for _, p := range [][]byte{nsKey(src, ""), []byte(src + "/")} {
		c := b.Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			nk := append([]byte(dst), k[len(src):]...)
			d, nm, err := splitKey(nk)
			if err != nil {
				return nil, err
			}
			if err := n.s.cfg.Limits.checkPath(d, nm); err != nil {
				return nil, fmt.Errorf("%s would become %.64q: %w", k, d+"/"+nm, err)
			}
			moves = append(moves, [2][]byte{bytes.Clone(k), nk})
		}
	}
	return moves, nil
}

// moveAccounting moves the entry counts (src's parent loses one, dst's gains one, a moved
// directory's counts follow it) and charges the metadata bytes the new names add.
func (n *Namespace) moveAccounting(tx *bolt.Tx, srcDir, srcName, dstDir, dstName string, isDir bool, below int64) error {
	src, dst := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	c, err := counts(tx, n.user)
	if err != nil {
		return err
	}
	if isDir {
		var rekey [][2][]byte
		if c.Get(countKey(src)) != nil {
			rekey = append(rekey, [2][]byte{countKey(src), countKey(dst)})
		}
		p := countKey(src + "/")
		cur := c.Cursor()
		for k, _ := cur.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = cur.Next() {
			rekey = append(rekey, [2][]byte{bytes.Clone(k), append(countKey(dst), k[1+len(src):]...)})
		}
		for _, r := range rekey {
			v := bytes.Clone(c.Get(r[0]))
			if err := c.Delete(r[0]); err != nil {
				return err
			}
			if err := c.Put(r[1], v); err != nil {
				return err
			}
		}
	}
	if err := n.removeEntry(tx, srcDir, srcName, false); err != nil {
		return err
	}
	if err := n.addEntry(tx, dstDir, dstName); err != nil {
		return err
	}
	return charge(tx, n.user, 0, below*int64(len(dst)-len(src)))
}
