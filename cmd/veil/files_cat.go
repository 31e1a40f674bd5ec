package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/storage"
)

// veil cat: a stored file's verified content on standard output (also 'veil get PATH -').

func init() { register(newCatCommand) }

func newCatCommand() *cobra.Command {
	var o clientFlags
	var pin pinFlags
	c := &cobra.Command{
		Use:   "cat PATH",
		Short: "Write a stored file's verified content to standard output",
		Long: `cat writes the content of the stored file PATH to standard output, as 'veil get PATH -'
does. Each chunk is verified (key record, chunk tag, guarded decryption) before any of its
bytes are written; a chunk that fails verification stops the output with an error and a
non-zero exit status, so what was written is a verified prefix of the file, never an
unverified byte. Directories and symlinks are refused ('veil get' retrieves them).

Examples:
  veil cat notes.txt
  veil cat Documents/report.pdf > /tmp/report.pdf
  veil cat logs/app.log | grep ERROR
  veil cat --version 1 notes.txt     # an older version (see 'veil log')`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return catTo(cmd, &o, &pin, args[0]) },
	}
	o.addFlags(c, false)
	pin.add(c, true)
	return c
}

// catTo writes the stored file path to the command's standard output.
// Its stdout is the file's content: a failure adds no JSON line to it, even with --json.
func catTo(cmd *cobra.Command, o *clientFlags, pin *pinFlags, path string) error {
	markContentOnStdout(cmd)
	return o.with(cmd, func(cl *dupless.Client) error {
		if err := pin.apply(cmd.Context(), cl, path); err != nil {
			return err
		}
		return deletedHint(cmd.Context(), cl, path, cl.Cat(cmd.Context(), path, cmd.OutOrStdout()))
	})
}

// deletedHint adds to err, a path not found, where to look when it was deleted: its
// versions are in the snapshots, which 'veil log' lists and 'get --version' reads.
func deletedHint(ctx context.Context, cl *dupless.Client, path string, err error) error {
	if !errors.Is(err, storage.ErrNotFound) || !cl.Deleted(ctx, path) {
		return err
	}
	return fmt.Errorf("%w (deleted: 'veil log' lists its versions, 'veil get --version N' retrieves one)", err)
}
