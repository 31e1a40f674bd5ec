package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/client"
)

func init() { register(newMetalCommand) }

func newMetalCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "metal",
		Short: "Metadata-hiding file storage over two servers (Metal)",
		Long: `metal stores fixed-size files on two servers so that neither learns which user accessed
which file, or even which file was accessed, as long as one of them is honest (Chen and
Popa, NDSS 2020; docs/design-metal.md). Each request is XOR-shared between the servers,
checked against your capability and served from an ORAM inside secure two-party
computation.

  veil metal join deployment.json          # the file Server 1's operator gives you
  veil metal account create                # a capability for a range of file ids
  veil metal ls
  veil metal write 0 notes.txt
  veil metal read 0 notes-copy.txt         # or to stdout without OUT
  veil metal anonym new > me.anonym        # sharing: give it out of band
  veil metal share 0 --to @bob.anonym      # read-only (--write: read+write)
  veil metal receive                       # capabilities others shared with you

Servers: 'veil metal server init|serve --role 1|2', or 'veil serve --metal' (both).`,
	}
	var o pkbFlags
	c.PersistentFlags().StringVar(&o.config, "config", "", "profile directory (default $VEIL_CONFIG or ~/.config/veil)")
	c.PersistentFlags().BoolVar(&o.json, "json", false, "print JSON")
	account := &cobra.Command{Use: "account", Short: "Metal accounts (capabilities for file ids)"}
	account.AddCommand(newMetalAccountCreate(&o))
	c.AddCommand(newMetalJoin(&o), account, newMetalLs(&o), newMetalWrite(&o), newMetalRead(&o), newMetalServerCommand())
	c.AddCommand(newMetalAnonym(&o), newMetalShare(&o), newMetalReceive(&o)) // Metal-SHARE: metal_share.go
	return c
}

func newMetalJoin(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "join DEPLOYMENT-FILE",
		Short: "Store a Metal deployment (both servers' addresses and CAs) in the profile",
		Long: `join stores the deployment file written by Server 1's 'veil metal server init'
(deployment.json) in <profile>/metal.json.

  veil metal join deployment.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			d, err := access.ParseDeployment(b)
			if err != nil {
				return err
			}
			if _, err := client.Join(o.dir(), d); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]string{"server1": d.Server1, "server2": d.Server2},
				fmt.Sprintf("joined Metal deployment %s + %s\n", d.Server1, d.Server2))
		},
	}
}

// metalClient loads the profile and connects to both servers.
func metalClient(cmd *cobra.Command, o *pkbFlags) (*client.Profile, *client.Client, error) {
	p, err := client.LoadProfile(o.dir())
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cmd.Context(), p.Deployment)
	return p, c, err
}

func newMetalAccountCreate(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "create",
		Short: "Create an account: a capability for a range of file ids, kept in the profile",
		Long: `create asks the two servers for a new account (Metal-AC CreateAccount, inside 2PC). The
capability and its file ids are stored in the profile; keep the profile private (the
capability is a bearer secret).

  veil metal account create
  veil metal account create --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, c, err := metalClient(cmd, o)
			if err != nil {
				return err
			}
			a, err := c.CreateAccount(cmd.Context())
			if err != nil {
				return err
			}
			p.Add(a)
			var enrollErr error
			if p.Share == nil { // the profile's first account: its sharing keys (metal_share.go)
				enrollErr = c.EnrollProfile(cmd.Context(), p, a.Capability)
			}
			if err := p.Save(o.dir()); err != nil {
				return err
			}
			if enrollErr != nil {
				return fmt.Errorf("account created, but its sharing keys were not obtained (run veil metal anonym enroll): %w", enrollErr)
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"first": a.First, "count": a.Count},
				fmt.Sprintf("account created: file ids %d..%d\n", a.First, a.First+uint64(a.Count)-1))
		},
	}
}

func newMetalLs(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List your capabilities (file id ranges and permissions)",
		Long: `ls lists the accounts in the profile: the file ids each capability grants.

  veil metal ls
  veil metal ls --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := client.LoadProfile(o.dir())
			if err != nil {
				return err
			}
			type row struct {
				First uint64 `json:"first"`
				Last  uint64 `json:"last"`
				Perm  string `json:"perm"`
			}
			rows := []row{}
			text := ""
			for _, a := range p.Accounts {
				r := row{First: a.First, Last: a.First + uint64(a.Count) - 1, Perm: "rws"}
				rows = append(rows, r)
				text += fmt.Sprintf("%d..%d\t%s\n", r.First, r.Last, r.Perm)
			}
			for _, rc := range p.Received { // shared with this profile (veil metal receive)
				rows = append(rows, row{First: rc.File, Last: rc.File, Perm: rc.Perm})
				text += fmt.Sprintf("%d\t%s\treceived via anonym %d\n", rc.File, rc.Perm, rc.Anonym)
			}
			if o.json {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"capabilities": rows})
			}
			_, err = io.WriteString(cmd.OutOrStdout(), text)
			return err
		},
	}
}

// metalTarget connects and finds the profile's capability for file id.
func metalTarget(cmd *cobra.Command, o *pkbFlags, id uint64) (*client.Client, []byte, error) {
	p, c, err := metalClient(cmd, o)
	if err != nil {
		return nil, nil, err
	}
	capability, err := p.CapabilityFor(id)
	return c, capability, err
}

func metalID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("file id %q is not a non-negative integer", s)
	}
	return id, nil
}

func newMetalWrite(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "write ID FILE",
		Short: "Store FILE (or - for stdin) as file id ID",
		Long: `write replaces file id ID's content with FILE's (at most the deployment's block size minus
4 bytes). Neither server learns ID, that this was a write, or the content.

  veil metal write 0 notes.txt
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
			c, capability, err := metalTarget(cmd, o, id)
			if err != nil {
				return err
			}
			if err := c.WriteFile(cmd.Context(), capability, id, data); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"id": id, "bytes": len(data)}, fmt.Sprintf("wrote %d bytes to file id %d\n", len(data), id))
		},
	}
}

func newMetalRead(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "read ID [OUT]",
		Short: "Read file id ID to OUT (default stdout)",
		Long: `read fetches file id ID's content (empty if never written). Neither server learns ID or
that this was a read.

  veil metal read 0
  veil metal read 0 notes-copy.txt`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := metalID(args[0])
			if err != nil {
				return err
			}
			c, capability, err := metalTarget(cmd, o, id)
			if err != nil {
				return err
			}
			data, err := c.ReadFile(cmd.Context(), capability, id)
			if err != nil {
				return err
			}
			if len(args) == 2 {
				if err := os.WriteFile(args[1], data, 0o600); err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), map[string]any{"id": id, "bytes": len(data)}, "")
			}
			if o.json {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"id": id, "content": data})
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
}
