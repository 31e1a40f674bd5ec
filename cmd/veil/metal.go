package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/client"
	"github.com/veil-project/veil/internal/profile"
)

func init() { register(newMetalCommand) }

func newMetalCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "metal",
		Short: "Metadata-hiding file storage over two servers (Metal)",
		Long: `metal stores files on two servers so that neither learns which user accessed which file,
or even which file was accessed, as long as one of them is honest (Chen and Popa, NDSS
2020; docs/design-metal.md). Each request is XOR-shared between the servers, checked
against your capability and served from an ORAM inside secure two-party computation.

The servers store blocks of one fixed size (chosen at server init, default 4 KiB); a larger
file is cut into segments over consecutive file ids from the ID you give. Your Metal state
(deployment, capabilities, the files you wrote) is <profile>/metal.json, sealed under the
profile's passphrase (--password-file, $VEIL_PASSWORD_FILE or a prompt).

  veil metal join deployment.json          # the file Server 1's operator gives you
  veil metal account create                # a capability for a range of file ids
  veil metal write 0 notes.txt             # a 10 KiB file takes ids 0..2 at 4 KiB blocks
  veil metal ls                            # your capabilities and files (ids, sizes)
  veil metal read 0 notes-copy.txt         # or to stdout: veil metal read 0
  veil metal anonym new > me.anonym        # sharing: give it out of band
  veil metal share 0 --to @bob.anonym      # read-only (--write: read+write)
  veil metal receive                       # capabilities others shared with you

Servers: 'veil metal server init|serve --role 1|2', or 'veil serve --metal' (both).`,
	}
	o := &metalFlags{}
	c.PersistentFlags().StringVar(&o.config, "config", "", "profile directory (default $VEIL_CONFIG or ~/.config/veil)")
	c.PersistentFlags().BoolVar(&o.json, "json", false, "print JSON")
	c.PersistentFlags().StringVar(&o.passwordFile, "password-file", "", "read the profile's passphrase from this file (default $"+profile.EnvPassword+", else prompt)")
	account := &cobra.Command{Use: "account", Short: "Metal accounts (capabilities for file ids)"}
	account.AddCommand(newMetalAccountCreate(o))
	c.AddCommand(newMetalJoin(o), account, newMetalLs(o), newMetalWrite(o), newMetalRead(o), newMetalSeal(o), newMetalServerCommand())
	c.AddCommand(newMetalAnonym(o), newMetalShare(o), newMetalReceive(o)) // Metal-SHARE: metal_share.go
	return c
}

// metalFlags are the client commands' flags.
type metalFlags struct {
	pkbFlags
	passwordFile string
}

// profile opens the sealed Metal profile. An unsealed one of an earlier version is sealed
// first when the profile's veil key confirms the passphrase; otherwise nothing can tell a
// mistyped passphrase, and the command refuses and names 'veil metal seal'.
func (o *metalFlags) profile(cmd *cobra.Command) (*client.Profile, error) {
	unsealed, err := client.Unsealed(o.dir())
	if err != nil {
		return nil, err // before any prompt
	}
	_, noKey := os.Stat(filepath.Join(o.dir(), profile.KeyFile))
	if unsealed && noKey != nil {
		return nil, client.ErrUnsealed
	}
	pass, err := passphrase(o.passwordFile, false)
	if err != nil {
		return nil, err
	}
	if unsealed {
		if err := profile.CheckPassphrase(o.dir(), pass); err != nil {
			return nil, fmt.Errorf("%w: metal.json is stored unsealed and would be sealed under it", err)
		}
		if err := client.Seal(o.dir(), pass); err != nil {
			return nil, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "veil metal: %s was stored unsealed; it is now sealed under the profile's passphrase\n", client.ProfileFile)
	}
	return client.LoadProfile(o.dir(), pass)
}

func newMetalSeal(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "seal",
		Short: "Seal an unsealed metal.json (written by an earlier veil) under the profile's passphrase",
		Long: `seal encrypts <profile>/metal.json, written unsealed by veil before session 5, under
the profile's passphrase. The passphrase is typed twice (or read from --password-file);
in a profile with a veil key it must be the one that opens that key. Other commands refuse
an unsealed metal.json in a profile without a veil key: nothing there could tell a
mistyped passphrase, which would lock the file under it.

  veil metal seal
  veil metal seal --password-file pass.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			unsealed, err := client.Unsealed(o.dir())
			if err != nil {
				return err
			}
			if !unsealed {
				return fmt.Errorf("%s is already sealed (veil passwd changes its passphrase)", client.ProfileFile)
			}
			pass, err := passphrase(o.passwordFile, true)
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(o.dir(), profile.KeyFile)); err == nil {
				if err := profile.CheckPassphrase(o.dir(), pass); err != nil {
					return fmt.Errorf("%w: metal.json is sealed under the passphrase of the profile's veil key", err)
				}
			} else if w := profile.WeakPassphrase(pass); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			if err := client.Seal(o.dir(), pass); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]any{"sealed": true},
				fmt.Sprintf("%s sealed under the profile's passphrase\n", client.ProfileFile))
		},
	}
}

// connect opens the profile and connects to both servers.
func (o *metalFlags) connect(cmd *cobra.Command) (*client.Profile, *client.Client, error) {
	p, err := o.profile(cmd)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cmd.Context(), p.Deployment)
	return p, c, err
}

func newMetalJoin(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "join DEPLOYMENT-FILE",
		Short: "Store a Metal deployment (both servers' addresses and CAs) in the profile",
		Long: `join stores the deployment file written by Server 1's 'veil metal server init'
(deployment.json) in <profile>/metal.json, sealed under the profile's passphrase. If the
profile already holds a veil key ('veil init'), the passphrase must be the one that opens
it: one passphrase per profile.

  veil metal join deployment.json
  veil metal join deployment.json --password-file pass.txt`,
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
			fresh := errors.Is(client.Exists(o.dir()), client.ErrNoProfile)
			pass, err := passphrase(o.passwordFile, fresh)
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(o.dir(), profile.KeyFile)); err == nil && fresh {
				if err := profile.CheckPassphrase(o.dir(), pass); err != nil {
					return fmt.Errorf("%w: metal.json is sealed under the passphrase of the profile's veil key", err)
				}
			}
			if _, err := client.Join(o.dir(), pass, d); err != nil {
				return err
			}
			return o.print(cmd.OutOrStdout(), map[string]string{"server1": d.Server1, "server2": d.Server2},
				fmt.Sprintf("joined Metal deployment %s + %s\n", d.Server1, d.Server2))
		},
	}
}

func newMetalAccountCreate(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "create",
		Short: "Create an account: a capability for a range of file ids, kept in the profile",
		Long: `create asks the two servers for a new account (Metal-AC CreateAccount, inside 2PC). The
capability and its file ids are stored in the profile's sealed metal.json (the capability
is a bearer secret).

  veil metal account create
  veil metal account create --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, c, err := o.connect(cmd)
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

func newMetalLs(o *metalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List your capabilities and the files you wrote (their ids and sizes)",
		Long: `ls lists, from the profile (no server is asked), the file ids each of your capabilities
grants and the files written from this profile: the ids each occupies (one per segment),
its size in bytes and in blocks.

  veil metal ls
  veil metal ls --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := o.profile(cmd)
			if err != nil {
				return err
			}
			return printMetalLs(cmd.OutOrStdout(), p, o.json)
		},
	}
}

func printMetalLs(w io.Writer, p *client.Profile, asJSON bool) error {
	type capRow struct {
		First uint64 `json:"first"`
		Last  uint64 `json:"last"`
		Perm  string `json:"perm"`
	}
	type fileRow struct {
		First  uint64 `json:"first"`
		Last   uint64 `json:"last"`
		Blocks uint32 `json:"blocks"`
		Size   uint64 `json:"size"`
	}
	caps, files := []capRow{}, []fileRow{}
	text := ""
	for _, a := range p.Accounts {
		r := capRow{First: a.First, Last: a.First + uint64(a.Count) - 1, Perm: "rws"}
		caps = append(caps, r)
		text += fmt.Sprintf("capability\t%d..%d\t%s\n", r.First, r.Last, r.Perm)
	}
	for _, rc := range p.Received { // shared with this profile (veil metal receive)
		caps = append(caps, capRow{First: rc.File, Last: rc.File, Perm: rc.Perm})
		text += fmt.Sprintf("capability\t%d\t%s\treceived via anonym %d\n", rc.File, rc.Perm, rc.Anonym)
	}
	for _, f := range p.Files {
		files = append(files, fileRow{First: f.First, Last: f.Last(), Blocks: f.Segments, Size: f.Size})
		text += fmt.Sprintf("file\t%d..%d\t%s in %s\n", f.First, f.Last(), plural(int(f.Size), "byte", "bytes"), plural(int(f.Segments), "block", "blocks"))
	}
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"capabilities": caps, "files": files})
	}
	_, err := io.WriteString(w, text)
	return err
}
