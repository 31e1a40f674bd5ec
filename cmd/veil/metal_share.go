package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/client"
	"github.com/veil-project/veil/internal/metal/share"
)

// Metal-SHARE commands: anonym new|enroll, share, receive (paper Section 6).

func newMetalAnonym(o *metalFlags) *cobra.Command {
	c := &cobra.Command{Use: "anonym", Short: "Anonyms: addresses others share files with, unlinkable to you and to each other"}
	c.AddCommand(newMetalAnonymNew(o), newMetalAnonymEnroll(o))
	return c
}

func newMetalAnonymNew(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "new",
		Short: "Make a new anonym (offline: no server contact) and print it",
		Long: `new makes the next anonym of this profile: an encryption, under the two servers' Paillier
keys, of shares of your account id, the anonym's index and a MAC under your anonym key
(paper Section 6.1). Give it to one person out of band; files they share with it reach
you, and 'veil metal receive' tells you which anonym each came through. Neither server,
nor anyone you give anonyms to, can link two of your anonyms or an anonym to you.

  veil metal anonym new > for-alice.txt
  veil metal anonym new --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := o.profile(cmd)
			if err != nil {
				return err
			}
			a, index, err := p.NewAnonym(rand.Reader)
			if err != nil {
				return err
			}
			if err := p.Save(o.dir()); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"index": index, "anonym": a.String()}, a.String()+"\n")
		},
	}
}

func newMetalAnonymEnroll(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "enroll",
		Short: "Get this profile's anonym and broadcast keys (done by 'account create')",
		Long: `enroll asks the servers, inside 2PC and from the profile's first account capability, for
the anonym key and broadcast key sharing needs, and fetches both servers' Paillier keys.
'veil metal account create' does it for a profile's first account; run it for profiles
made before sharing existed.

  veil metal anonym enroll`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			if len(p.Accounts) == 0 {
				return errors.New("no account in this profile (run veil metal account create)")
			}
			capability, err := p.CapabilityFor(p.Accounts[0].First)
			if err != nil {
				return err
			}
			if err := c.EnrollProfile(cmd.Context(), p, capability); err != nil {
				return err
			}
			if err := p.Save(o.dir()); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"enrolled": true}, "sharing keys stored in the profile\n")
		},
	}
}

// readAnonym takes an anonym as text or @FILE.
func readAnonym(s string) (share.Anonym, error) {
	if strings.HasPrefix(s, "@") {
		b, err := os.ReadFile(s[1:])
		if err != nil {
			return share.Anonym{}, err
		}
		s = string(b)
	}
	return share.ParseAnonymText(s)
}

func newMetalShare(o *metalFlags) *cobra.Command {
	var to string
	var write bool
	c := &cobra.Command{
		Use:   "share ID --to ANONYM",
		Short: "Give the owner of ANONYM a read (or read+write) capability for file id ID",
		Long: `share sends a capability for one of your files to whoever made ANONYM (paper Section 6,
SendCapability): your client rerandomizes the anonym, the servers check your capability,
open the anonym and grant the capability inside 2PC, and append it, encrypted under the
receiver's broadcast key, to Server 1's broadcast list. Neither server learns who you
shared with, which file, or whether the servers granted it. You learn whether your own
capability allowed the share, not whether ANONYM was genuine: a forged or altered anonym
gets nobody anything, silently (an answer would let a sender work out who made the
anonym). ANONYM is the text 'veil metal anonym new' printed, or @FILE holding it.

  veil metal share 1 --to @bob.anonym
  veil metal share 1 --to veil-anonym-AQ... --write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := metalID(args[0])
			if err != nil {
				return err
			}
			a, err := readAnonym(to)
			if err != nil {
				return err
			}
			p, c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			capability, err := p.CapabilityFor(id)
			if err != nil {
				return err
			}
			pk1, pk2, err := c.ShareKeys(cmd.Context())
			if err != nil {
				return err
			}
			perm := ac.Read
			if write {
				perm |= ac.Write
			}
			if err := c.SendCapability(cmd.Context(), share.SendRequest{Capability: capability, File: id, Perm: perm, To: a}, pk1, pk2); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"id": id, "perm": client.PermString(perm)},
				fmt.Sprintf("shared file id %d (%s) with the anonym's owner\n", id, client.PermString(perm)))
		},
	}
	c.Flags().StringVar(&to, "to", "", "the receiver's anonym, or @FILE (required)")
	c.Flags().BoolVar(&write, "write", false, "grant read and write (default: read only)")
	c.MarkFlagRequired("to")
	return c
}

func newMetalReceive(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "receive",
		Short: "Download the broadcast list and keep the capabilities shared with you",
		Long: `receive downloads Server 1's capability broadcast list since your last receive (all of
it: every user downloads every entry, so nobody learns how many are yours), keeps the
entries your broadcast key opens, and records their capabilities: 'veil metal read' then
works on the shared files.

  veil metal receive
  veil metal receive --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			got, entries, expired, err := c.Receive(cmd.Context(), p)
			if err != nil {
				return err
			}
			type row struct {
				ID     uint64 `json:"id"`
				Perm   string `json:"perm"`
				Anonym uint32 `json:"anonym"`
			}
			rows, text := []row{}, ""
			if expired > 0 {
				text += fmt.Sprintf("warning: %s of the list expired before this receive\n", plural(int(expired), "epoch", "epochs"))
			}
			for _, r := range got {
				rows = append(rows, row{r.File, client.PermString(r.Perm), r.Index})
				text += fmt.Sprintf("file id %d (%s) via anonym %d\n", r.File, client.PermString(r.Perm), r.Index)
			}
			if err := p.Save(o.dir()); err != nil {
				return err
			}
			text += fmt.Sprintf("%s received (%s downloaded)\n", plural(len(got), "capability", "capabilities"), plural(int(entries), "entry", "entries"))
			return o.print(cmd.OutOrStdout(), map[string]any{"received": rows, "entries": entries, "expired_epochs": expired}, text)
		},
	}
}
