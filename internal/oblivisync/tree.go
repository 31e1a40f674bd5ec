package oblivisync

import (
	"sort"
	"syscall"
)

// tree is a set of inodes indexed by number and by (parent, name).
type tree struct {
	nodes map[uint64]*node
	kids  map[uint64]map[string]uint64
	// newerWins: on a name clash keep the inode with the later ctime (readers only; see put).
	newerWins bool
}

func newTree() *tree {
	return &tree{nodes: map[uint64]*node{}, kids: map[uint64]map[string]uint64{}}
}

func (t *tree) get(ino uint64) *node { return t.nodes[ino] }

// put inserts or replaces n, moving its directory entry if the parent or name changed.
func (t *tree) put(n *node) {
	if old := t.nodes[n.Ino]; old != nil && (old.Parent != n.Parent || old.Name != n.Name) {
		t.unlinkName(old)
	}
	t.nodes[n.Ino] = n
	if n.Ino == rootIno {
		return
	}
	m := t.kids[n.Parent]
	if m == nil {
		m = map[string]uint64{}
		t.kids[n.Parent] = m
	}
	// Two committed inodes can briefly claim one name when a replace's two pages land
	// in different epochs; the newer (later ctime) wins. A writer's tree never has this.
	if o := t.nodes[m[n.Name]]; t.newerWins && o != nil && o.Ino != n.Ino && o.Parent == n.Parent && o.Name == n.Name && o.Ctime > n.Ctime {
		return
	}
	m[n.Name] = n.Ino
}

func (t *tree) unlinkName(n *node) {
	if m := t.kids[n.Parent]; m != nil && m[n.Name] == n.Ino {
		delete(m, n.Name)
		if len(m) == 0 {
			delete(t.kids, n.Parent)
		}
	}
}

func (t *tree) del(ino uint64) {
	if n := t.nodes[ino]; n != nil {
		t.unlinkName(n)
		delete(t.nodes, ino)
	}
}

// lookup returns the child called name of directory parent, if both exist.
func (t *tree) lookup(parent uint64, name string) *node {
	if t.nodes[parent] == nil {
		return nil
	}
	if ino, ok := t.kids[parent][name]; ok {
		return t.nodes[ino]
	}
	return nil
}

// children returns the entries of a directory sorted by name.
func (t *tree) children(parent uint64) []DirEntry {
	m := t.kids[parent]
	out := make([]DirEntry, 0, len(m))
	for name, ino := range m {
		if n := t.nodes[ino]; n != nil {
			out = append(out, DirEntry{Name: name, Ino: ino, Mode: n.Mode})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reachable reports whether ino's ancestors lead to the root (orphans are invisible).
func (t *tree) reachable(ino uint64) bool {
	for i := 0; i < 4096; i++ {
		if ino == rootIno {
			return t.nodes[rootIno] != nil
		}
		n := t.nodes[ino]
		if n == nil {
			return false
		}
		p := t.nodes[n.Parent]
		if p == nil || !p.isDir() || t.kids[n.Parent][n.Name] != ino {
			return false
		}
		ino = n.Parent
	}
	return false
}

func newRoot(now int64) *node {
	return &node{Ino: rootIno, Mode: syscall.S_IFDIR | 0o755, Atime: now, Mtime: now, Ctime: now}
}

func (n *node) attr() Attr {
	a := Attr{Ino: n.Ino, Mode: n.Mode, Uid: n.Uid, Gid: n.Gid, Size: n.Size,
		Atime: n.Atime, Mtime: n.Mtime, Ctime: n.Ctime, Nlink: 1}
	if n.isDir() {
		a.Nlink = 2
	}
	return a
}
