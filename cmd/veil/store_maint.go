package main

// The store's maintenance commands: stats, gc and fsck, offline or against a running
// server through the admin API.

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/words"
)

func newStoreStatsCommand() *cobra.Command {
	var tgt storeTarget
	var jsonOut bool
	c := &cobra.Command{
		Use:   "stats (--dir DIR | --url URL --credential ADMIN.cred)",
		Short: "Show logical vs physical bytes and the dedup ratio",
		Long: `stats prints the store's totals: what users stored (logical bytes), what the store keeps
(physical bytes, each distinct content once), and their ratio. Read them from the data
directory with the server stopped (or any time, when the metadata is in PostgreSQL), or ask
a running server with the admin credential:

  veil store stats --dir /srv/veil-store
  veil store stats --url https://127.0.0.1:7480 --credential /srv/veil-store/admin.cred --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st storeserver.Stats
			err := tgt.run(func(s *storeserver.Service) (err error) {
				st, err = s.Stats()
				return err
			}, func(a *remote.Admin) (err error) {
				st, err = a.Stats(cmd.Context())
				return err
			})
			if err != nil {
				return err
			}
			return printStoreStats(cmd.OutOrStdout(), st, jsonOut)
		},
	}
	tgt.flags(c)
	c.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return c
}

func newStoreGCCommand() *cobra.Command {
	var tgt storeTarget
	var jsonOut bool
	c := &cobra.Command{
		Use:   "gc (--dir DIR | --url URL --credential ADMIN.cred)",
		Short: "Reclaim unreferenced content and leftovers of crashes",
		Long: `gc removes content no name references any more, content files left without a record by a
crash, and upload files no upload holds. It is safe while uploads run, on any node of a
store whose metadata is in PostgreSQL (docs/deploy.md), with --dir too.

  veil store gc --dir /srv/veil-store
  veil store gc --url https://127.0.0.1:7480 --credential /srv/veil-store/admin.cred`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rep storewire.GCReport
			err := tgt.run(func(s *storeserver.Service) error {
				r, err := s.GC(cmd.Context())
				rep = storewire.GCReport(r)
				return err
			}, func(a *remote.Admin) (err error) {
				rep, err = a.GC(cmd.Context())
				return err
			})
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s (%s), %s, %s\n", plural(int(rep.Blobs), "unreferenced blob", "unreferenced blobs"),
				humanBytes(rep.Bytes), plural(int(rep.OrphanBlobs), "orphaned blob", "orphaned blobs"), plural(int(rep.StaleUploads), "stale upload", "stale uploads"))
			return nil
		},
	}
	tgt.flags(c)
	c.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return c
}

func newStoreFsckCommand() *cobra.Command {
	var dir, blobs string
	var jsonOut bool
	c := &cobra.Command{
		Use:   "fsck --dir DIR",
		Short: "Check every record and re-hash all content",
		Long: `fsck checks the metadata (records, reference counts, per-user totals) and re-hashes every
content file (with the server stopped; a store with its metadata in PostgreSQL also while its
nodes serve, where an upload in flight may count as an orphaned blob). It exits 0 when clean
and 3 when it found problems; leftovers of crashes are reported but are not problems (gc
reclaims them).

  veil store fsck --dir /srv/veil-store`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := storeConfig(cmd.Context(), dir, blobs)
			if err != nil {
				return err
			}
			return storeserver.WithConfig(dir, cfg, func(s *storeserver.Service) error {
				rep, err := s.Fsck(cmd.Context())
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if jsonOut {
					json.NewEncoder(w).Encode(rep)
				} else {
					printFsck(w, rep)
				}
				if !rep.Clean() {
					return exitError{"fsck: " + plural(len(rep.Problems), "problem", "problems"), 3}
				}
				return nil
			})
		},
	}
	dirFlag(c, &dir)
	c.Flags().StringVar(&blobs, "blobs", "", "the blob location (default: the one DIR records)")
	c.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return c
}

func printFsck(w io.Writer, rep storeserver.FsckReport) {
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "problem: %s\n", words.Escape(p))
	}
	state := "clean"
	if !rep.Clean() {
		state = plural(len(rep.Problems), "problem", "problems")
	}
	fmt.Fprintf(w, "%s: %s, %s (%d unreferenced), %s, %s\n", state, plural(int(rep.Objects), "object", "objects"), plural(int(rep.Blobs), "blob", "blobs"),
		rep.GarbageBlobs, plural(int(rep.OrphanBlobs), "orphaned blob", "orphaned blobs"), plural(int(rep.StaleUploads), "stale upload", "stale uploads"))
}

// printStoreStats prints the store's totals as a table, or as JSON.
func printStoreStats(w io.Writer, st storeserver.Stats, jsonOut bool) error {
	if jsonOut {
		return json.NewEncoder(w).Encode(st)
	}
	hint := "" // 'veil serve' never collects garbage itself: say which command does
	if st.GarbageBlobs > 0 {
		hint = "; 'veil store gc' reclaims them"
	}
	_, err := fmt.Fprintf(w, "users           %d\nobjects         %d\nlogical bytes   %s\nphysical bytes  %s (%s)\n"+
		"garbage         %s (%s%s)\ndedup ratio     %.2f\n", st.Users, st.Objects, humanBytes(st.LogicalBytes),
		humanBytes(st.PhysicalBytes), plural(int(st.Blobs), "blob", "blobs"), humanBytes(st.GarbageBytes), plural(int(st.GarbageBlobs), "blob", "blobs"), hint, st.DedupRatio)
	return err
}
