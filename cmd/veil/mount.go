package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/dupless/fusemount"
)

// veil mount: the stored files and their snapshots as a read-only FUSE file system.

func init() { register(newMountCommand) }

func newMountCommand() *cobra.Command {
	var o clientFlags
	c := &cobra.Command{
		Use:   "mount MOUNTPOINT",
		Short: "Browse your stored files and snapshots as a read-only folder (FUSE)",
		Long: `mount serves your stored files, read-only, at MOUNTPOINT (an existing empty folder):

  MOUNTPOINT/current/               the newest tree
  MOUNTPOINT/snapshots/<time>/      each snapshot ('veil snapshots'), named by its local time
                                    to the second (".<number>" added when two share one)

Every byte is verified as 'veil get' verifies it (authenticated records listed by the
snapshot's tree root, chunk tags, guarded decryption); a chunk that fails verification
makes the read fail with an I/O error, it never returns unverified bytes. Content is
fetched when read, and a snapshot's list of files when its folder is first opened (the
newest at start; a few are kept, others fetched again when browsed again). The mount shows
the snapshots that existed when it started; mount again to see newer ones. It runs until
Ctrl-C, SIGTERM or 'fusermount3 -u MOUNTPOINT'.
Needs FUSE (/dev/fuse and fusermount3: apt install fuse3).

Examples:
  mkdir -p ~/veil && veil mount ~/veil
  ls ~/veil/snapshots/ && cp ~/veil/snapshots/2026-11-20T18:02:11/Documents/report.pdf .
  veil mount --json /mnt/veil     # prints {"mountpoint": ..., "snapshots": N} once mounted`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := emptyMountpoint(args[0]); err != nil {
				return err
			}
			return o.with(cmd, func(cl *dupless.Client) error {
				level := slog.LevelWarn
				if o.verbose {
					level = slog.LevelDebug
				}
				return fusemount.Run(cmd.Context(), fusemount.Config{
					Client: cl, Mountpoint: args[0],
					Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
					Ready: func(snaps int) {
						if o.json {
							out := names("mountpoint", args[0])
							out["snapshots"] = snaps
							json.NewEncoder(cmd.OutOrStdout()).Encode(out)
							return
						}
						fmt.Fprintf(cmd.OutOrStdout(), "mounted %s at %s (read-only); Ctrl-C to unmount\n", plural(snaps, "snapshot", "snapshots"), args[0])
					},
				})
			})
		},
	}
	o.addFlags(c, false)
	return c
}

// emptyMountpoint insists that path is an existing empty folder. Found by a user
// walkthrough: FUSE 3 mounts over a folder that holds files, so a mistyped 'veil mount
// ~/Documents' hid them behind the mount until it ended.
func emptyMountpoint(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mount point %s: not an existing folder", path)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return fmt.Errorf("mount point %s: not an existing folder", path)
	}
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("mount point %s is not empty: mount on an empty folder (what is in it would be hidden while mounted)", path)
	}
	return nil
}
