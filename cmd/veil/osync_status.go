package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/oblivisync"
)

func newOsyncStatus() *cobra.Command {
	var f osyncFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "status --backend DIR",
		Short: "Show fill level, epoch, and this machine's pending buffer",
		Long: `status reads the backend's committed state (as any read-only client would) and this
machine's writer state: the journal itself when no writer is running (what is still
waiting to sync, and whether this state is behind the backend), or the status a running
writer publishes after every epoch. It changes nothing. --json prints exact byte counts.

Example:
  veil osync status --backend ~/Dropbox/osync
  veil osync status --backend ~/Dropbox/osync --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pass, err := f.passphrase(false)
			if err != nil {
				return err
			}
			st, err := oblivisync.Status(f.backend, pass, f.stateDir, stateRoot())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(st)
			}
			printStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	f.add(c)
	f.addState(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printStatus(out io.Writer, st oblivisync.BackendStatus) {
	fmt.Fprintf(out, "backend   %s (%d files x %s, k=%d, t=%s)\n", st.Backend, st.Files, humanize.IBytes(uint64(st.FileSize)), st.K, st.DripTime)
	fmt.Fprintf(out, "epoch     %d\ninodes    %d\nfill      %.2f%% (%s of %s)\n", st.Epoch, st.Inodes, 100*st.Fill,
		humanize.IBytes(st.Used), humanize.IBytes(st.Capacity))
	w := st.Writer
	switch {
	case w == nil:
		fmt.Fprintf(out, "writer    no writer state in %s\n", st.StateDir)
		return
	case w.Running:
		fmt.Fprintf(out, "writer    running (state %s)\n", st.StateDir)
	default:
		fmt.Fprintf(out, "writer    stopped (state %s; read from its journal)\n", st.StateDir)
	}
	fmt.Fprintf(out, "buffer    %s pending in %s (%s); journal %s", humanize.IBytes(w.PendingBytes),
		plural(int(w.PendingInodes), "file", "files"), plural(int(w.PendingFrags), "fragment", "fragments"), humanize.IBytes(uint64(w.JournalBytes)))
	if w.Updated != "" {
		fmt.Fprintf(out, ", as of %s", w.Updated)
	}
	fmt.Fprintln(out)
	if w.Behind != "" {
		fmt.Fprintf(out, "WARNING   %s\n", w.Behind)
	}
}

func printInit(out io.Writer, dir string, p oblivisync.Params, kdf oblivisync.KDF) {
	capacity := uint64(p.Files) * uint64(p.FileSize)
	fmt.Fprintf(out, "created osync backend %s: %d files of %s (about %s; keep it under a third full for ~1-epoch latency), superblock, osync.key\n",
		dir, p.Files, humanize.IBytes(uint64(p.FileSize)), humanize.IBytes(capacity))
	fmt.Fprintf(out, "every %s a writer rewrites %d random files and the superblock; key sealed with argon2id (%d passes, %s)\n",
		p.DripTime, p.K, kdf.Time, humanize.IBytes(uint64(kdf.MemoryKiB)<<10))
	fmt.Fprintf(out, "next: veil osync mount --backend %s MOUNTPOINT  (without the passphrase the backend cannot be read)\n", dir)
}
