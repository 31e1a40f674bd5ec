package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/dupless/fusemount"
)

// veil mount: the stored files and their snapshots as a read-only FUSE file system.

func init() { register(newMountCommand) }

func newMountCommand() *cobra.Command {
	var o clientFlags
	var readTimeout, refresh time.Duration
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
newest at start; a few are kept, others fetched again when browsed again). It runs until
Ctrl-C, SIGTERM or 'fusermount3 -u MOUNTPOINT'.
Needs FUSE (/dev/fuse and fusermount3: apt install fuse3).

--read-timeout bounds each request the kernel makes of the mount (a read, a lookup, a
folder's listing), fetching from the storage service included. Past it the program
reading gets an I/O error (EIO), as from a disk that stopped answering, the mount says so
on stderr ("read failed") and goes on serving. The default, 90s, lets a read fetch the two chunks it
needs at most (8 MiB each) over a link of 200 kB/s. Raise it for a slower link; lower it
(10s, say) to have a backup or indexing tool scanning the mount fail fast when the service
is down instead of waiting 90s per file. It takes a Go duration (30s, 2m, 1m30s), at least
1s.

current/ follows what later commands store, from this device or another: when a folder
under current/ (or snapshots/) is looked up or listed and the last check is older than
--refresh (default 10s), the mount asks the storage service whether a newer snapshot
exists (one small request; an idle mount asks nothing) and, if so, shows it: new and
changed files appear, removed ones disappear, and snapshots/ lists the new snapshots. A
file already open keeps reading the version it opened. The kernel keeps what it was told
about current/ for --refresh too, so a change shows within about twice that.
--refresh 0 keeps current/ and snapshots/ as they were when mounted; otherwise at least 1s.

Examples:
  mkdir -p ~/veil && veil mount ~/veil
  ls ~/veil/snapshots/ && cp ~/veil/snapshots/2026-11-20T18:02:11/Documents/report.pdf .
  veil mount --json /mnt/veil     # prints {"mountpoint": ..., "snapshots": N} once mounted
  veil mount --read-timeout 5m ~/veil   # a slow link: wait up to 5 minutes per read
  veil mount --refresh 1m ~/veil        # check for newer snapshots at most once a minute`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if readTimeout < fusemount.MinReadTimeout {
				return argError{fmt.Errorf("--read-timeout %v: give at least %v (a duration such as 30s or 5m)", readTimeout, fusemount.MinReadTimeout), cmd}
			}
			switch {
			case refresh == 0:
				refresh = -1 // never
			case refresh < fusemount.MinRefresh:
				return argError{fmt.Errorf("--refresh %v: give at least %v, or 0 for never (a duration such as 10s or 1m)", refresh, fusemount.MinRefresh), cmd}
			}
			if err := emptyMountpoint(args[0]); err != nil {
				return err
			}
			return o.with(cmd, func(cl *dupless.Client) error {
				return fusemount.Run(cmd.Context(), fusemount.Config{
					Client: cl, Mountpoint: args[0], ReadTimeout: readTimeout, Refresh: refresh,
					Logger: commandLog(cmd.ErrOrStderr(), o.verbose), // "warning: ..." lines, as other commands
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
	c.Flags().DurationVar(&readTimeout, "read-timeout", fusemount.DefaultReadTimeout, "how long a read, lookup or listing may wait for the storage service before the program reading gets an I/O error (at least 1s)")
	c.Flags().DurationVar(&refresh, "refresh", fusemount.DefaultRefresh, "how often current/ may check for a newer snapshot when used (at least 1s; 0: never, current/ stays as mounted)")
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
