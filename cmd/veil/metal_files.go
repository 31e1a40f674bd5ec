package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/metal/client"
)

func metalID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("file id %q is not a non-negative integer", s)
	}
	return id, nil
}

// metalProgress reports accesses on stderr when a file takes more than one.
func metalProgress(cmd *cobra.Command, verb string) func(done, total int) {
	return func(done, total int) {
		if total > 1 {
			fmt.Fprintf(cmd.ErrOrStderr(), "veil metal: %s: access %d of %d\n", verb, done, total)
		}
	}
}

func newMetalWrite(o *metalFlags) *cobra.Command {
	var force bool
	var pad int
	c := &cobra.Command{
		Use:   "write ID FILE",
		Short: "Store FILE (or - for stdin) at file id ID (and the ids after it if it is larger than a block)",
		Long: `write stores FILE's content from file id ID on. A file larger than one block is cut into
segments over consecutive ids ID, ID+1, ... (each block holds block size - 33 bytes: a
4 KiB block 4063), which must all be covered by your capabilities. Neither server learns
the ids, that this was a write, or the content; they see one access per segment (--pad N
makes it exactly N accesses, whatever the size). Progress goes to stderr.

The segments after the first are written first and the first last, each carrying a
nonce fresh for this write: an interrupted write leaves the previous version readable or
is refused on reading, never returned mixed. A write whose ids overlap another file
written from this profile is refused unless --force (that file is then dropped from ls).

  veil metal write 0 notes.txt
  veil metal write 16 photo.jpg --pad 32       # 32 accesses whatever its size (up to 32 blocks)
  echo hello | veil metal write 1 -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := metalID(args[0])
			if err != nil {
				return err
			}
			var data []byte
			if args[1] == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(args[1])
			}
			if err != nil {
				return err
			}
			p, c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			span, err := c.SpanOf(id, len(data))
			if err != nil {
				return err
			}
			over := p.Overlapping(span)
			if len(over) > 0 && !force {
				return fmt.Errorf("the file needs ids %d..%d, which overlap the file at ids %d..%d (written from this profile); --force overwrites it", span.First, span.Last(), over[0].First, over[0].Last())
			}
			if _, err := c.WriteFile(cmd.Context(), p.CapabilityFor, id, data, client.FileOptions{Pad: pad, Progress: metalProgress(cmd, "write")}); err != nil {
				return err
			}
			for _, f := range over {
				fmt.Fprintf(cmd.ErrOrStderr(), "veil metal: the file at ids %d..%d is overwritten and dropped from ls\n", f.First, f.Last())
			}
			p.Record(span)
			if err := p.Save(o.dir()); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"id": id, "first": span.First, "last": span.Last(), "blocks": span.Segments, "bytes": len(data)},
				writtenText(len(data), span.First, span.Last()))
		},
	}
	c.Flags().BoolVar(&force, "force", false, "write even over ids another of your files occupies")
	c.Flags().IntVar(&pad, "pad", 0, "make the write exactly N accesses (hides the size in blocks; refuses a larger file)")
	return c
}

func newMetalRead(o *metalFlags) *cobra.Command {
	var pad int
	c := &cobra.Command{
		Use:   "read ID [OUT|-]",
		Short: "Read the file starting at file id ID to OUT (default stdout)",
		Long: `read fetches the file whose first segment is at file id ID, reading each of its
segments and checking they belong to one write: a segment of another file or of an
interrupted write is refused with an error, never returned, and so is an id never written
("never written", exit 1; an empty file written there reads as empty). Neither server
learns ID, that this was a read, or what it found.

OUT is written atomically (a temporary file beside it, fsync, rename) and only once every
segment checked; an OUT that exists and is not a regular file (a device, a FIFO, a
directory, a symlink) is refused before any access. Without OUT, or with -, the file goes
to stdout.

  veil metal read 0
  veil metal read 0 notes-copy.txt
  veil metal read 16 photo.jpg --pad 32`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := metalID(args[0])
			if err != nil {
				return err
			}
			out := ""
			if len(args) == 2 && args[1] != "-" {
				out = args[1]
				if err := atomicfile.CheckReplaceable(out); err != nil {
					return fmt.Errorf("%w: not replaced (give - or no OUT to write to standard output)", err)
				}
				if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
					return fmt.Errorf("%s: no directory to write it in", out) // before any access
				}
			}
			p, c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			data, span, err := c.ReadFile(cmd.Context(), p.CapabilityFor, id, client.FileOptions{Pad: pad, Progress: metalProgress(cmd, "read")})
			if err != nil {
				return err
			}
			info := map[string]any{"id": id, "last": span.Last(), "blocks": span.Segments, "bytes": len(data)}
			if out != "" {
				if err := atomicfile.Write(out, data, 0o600, true); err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), info, "")
			}
			if o.json {
				info["content"] = data
				return json.NewEncoder(cmd.OutOrStdout()).Encode(info)
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	c.Flags().IntVar(&pad, "pad", 0, "make the read exactly N accesses (refuses a file of more blocks)")
	return c
}

// writtenText is write's summary: "file id 16 (1 block)" or "file ids 16..18 (3 blocks)".
func writtenText(n int, first, last uint64) string {
	if first == last {
		return fmt.Sprintf("wrote %d bytes to file id %d (1 block)\n", n, first)
	}
	return fmt.Sprintf("wrote %d bytes to file ids %d..%d (%d blocks)\n", n, first, last, last-first+1)
}
