package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/oblivisync"
)

func newOsyncAdopt() *cobra.Command {
	var f osyncFlags
	var asJSON, acceptRollback bool
	c := &cobra.Command{
		Use:   "adopt --backend DIR [--state DIR]",
		Short: "Make a writer state that is behind the backend follow it again (its unsynced changes are set aside)",
		Long: `adopt is for a writer state directory that another writer has overtaken: after you wrote
from a second machine (or with another --state), mounting or syncing with the first one
refuses to start ("behind the backend"), because its unsynced changes would revert the
other writer's data.

adopt moves that state's journal, checkpoint and records into a "set-aside-<epoch>-<time>"
subdirectory (nothing is deleted, nothing of it is applied) and records the backend's
current superblock: the next mount starts from what the backend holds. Changes that
existed only in the set-aside journal are not in the backend; copy them in again from
where you made them if you still need them. A state that is not behind is refused
(mount it instead: its pending changes can still sync).

--accept-rollback is for a backend folder you restored from a backup on purpose: it is
older than what this machine last saw, which mount and sync refuse as a rollback. adopt
then sets this state aside the same way, and the next mount starts from the restored
folder. Without it a rolled-back backend is refused (the cloud may have rolled it back).

Examples:
  veil osync adopt --backend ~/Dropbox/osync
  veil osync adopt --backend ~/Dropbox/osync --state ~/.local/state/veil/osync/laptop --json
  veil osync adopt --backend ~/Dropbox/osync --accept-rollback   # after restoring the folder`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pass, err := f.passphrase(false)
			if err != nil {
				return err
			}
			rep, err := oblivisync.AdoptWith(f.backend, pass, f.stateDir, stateRoot(), oblivisync.AdoptOptions{AcceptRollback: acceptRollback})
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s now follows the backend at epoch %d\n", rep.StateDir, rep.Epoch)
			if rep.SetAside != "" {
				fmt.Fprintf(out, "set aside, not applied: %s (%s; %s pending at its last checkpoint) in %s\n",
					strings.Join(rep.Moved, ", "), humanize.IBytes(uint64(rep.Bytes)), plural(int(rep.PendingFragments), "fragment", "fragments"), rep.SetAside)
			}
			return nil
		},
	}
	f.add(c)
	f.addState(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&acceptRollback, "accept-rollback", false, "also adopt a backend older than this state last saw (you restored the folder from a backup)")
	return c
}
