package allinone

import (
	"fmt"
	"os"
	"path/filepath"
)

// Setup is Init for a command that then starts the servers ('veil serve'). explicit holds
// the addresses the user gave (empty fields: not given). For an existing deployment an
// explicit address that differs from its stored one is refused instead of silently
// ignored. undo removes what this call created, for a first run whose servers then fail
// to start (a taken port): such a run leaves nothing half made.
func Setup(dir string, cfg, explicit Config) (_ Config, undo func(), err error) {
	undo = func() {}
	if old, err := LoadConfig(dir); err == nil {
		return old, undo, differs(dir, old, explicit)
	}
	before := map[string]bool{}
	_, statErr := os.Stat(dir)
	existed := statErr == nil
	if existed {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return cfg, undo, err
		}
		for _, e := range ents {
			before[e.Name()] = true
		}
	}
	undo = func() {
		if !existed {
			os.RemoveAll(dir)
			return
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !before[e.Name()] {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	got, err := Init(dir, cfg)
	if err != nil {
		undo()
		return got, func() {}, err
	}
	return got, undo, nil
}

// differs refuses explicit addresses that are not the deployment's (fixed at its first
// run: the credentials it issued carry them).
func differs(dir string, old, explicit Config) error {
	pk, pv := pkbAddrs(old)
	for _, f := range []struct{ flag, was, want string }{
		{"--ks-listen", old.KSAddr, explicit.KSAddr}, {"--ks-udp", old.KSUDP, explicit.KSUDP},
		{"--store-listen", old.StoreAddr, explicit.StoreAddr},
		{"--peekaboo-k-listen", pk, explicit.PkbKAddr}, {"--peekaboo-v-listen", pv, explicit.PkbVAddr},
	} {
		if f.want != "" && f.want != f.was {
			return fmt.Errorf("%s was set up with %s %s at its first run (its credentials name that address); "+
				"drop %s, or serve a new deployment with another --dir", dir, f.flag, f.was, f.flag)
		}
	}
	return nil
}
