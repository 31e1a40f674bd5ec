package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
)

func newTreeRootCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "root",
		Short: "Show the tree root that vouches for your stored files (rollback detection)",
		Long: `Every command that changes your stored files ends by writing a tree root: an
authenticated, numbered list of all your key records. Reads check each record against the
newest root, and this device remembers the newest root it has seen (in the profile
directory), so a storage service that rolls a file back, deletes one, or shows an older
root is caught.

'veil root' prints the newest root's number and hash. To check that two devices see the
same history, compare what it prints on both. A device that never saw a root trusts the
first one it is shown; copy the profile directory (its roots/ folder) to pin it.

Examples:
  veil root
  veil root --json
  veil root accept     # trust the service's current root after restoring it from a backup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.with(cmd, func(cl *dupless.Client) error {
				info, err := cl.Root(cmd.Context())
				if err != nil {
					return err
				}
				return printRoot(cmd, o.json, info)
			})
		},
	}
	o.addFlags(c, false)
	var ao clientFlags
	accept := &cobra.Command{
		Use:   "accept",
		Short: "Trust the storage service's newest tree root, even if it is older than one seen before",
		Long: `accept makes this device remember the storage service's newest tree root as it is now.
Use it only when you know why the service went back (it was restored from a backup, or you
deliberately reset it): afterwards, files as that root lists them are accepted again.

Example:
  veil root accept`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return ao.with(cmd, func(cl *dupless.Client) error {
				info, err := cl.AcceptRoot(cmd.Context())
				if err != nil {
					return err
				}
				return printRoot(cmd, ao.json, info)
			})
		},
	}
	ao.addFlags(accept, false)
	c.AddCommand(accept)
	return c
}

func printRoot(cmd *cobra.Command, asJSON bool, info *dupless.RootInfo) error {
	out := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(out).Encode(info)
	}
	if info == nil {
		fmt.Fprintln(out, "no tree root yet (nothing stored, or stored by an older veil: the next put writes one)")
		return nil
	}
	fmt.Fprintf(out, "root %d  %s  %s  sha256 %s\n", info.Seq, info.Time.Format(time.DateTime), plural(info.Records, "record", "records"), info.SHA256)
	return nil
}
