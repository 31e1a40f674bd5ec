package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/metal/client"
	"github.com/veil-project/veil/internal/profile"
)

// envNewPassword names a file holding the new passphrase for 'veil passwd'.
const envNewPassword = "VEIL_NEW_PASSWORD_FILE"

func init() { register(newPasswdCommand) }

func newPasswdCommand() *cobra.Command {
	var o clientFlags
	var newFile string
	c := &cobra.Command{
		Use:   "passwd",
		Short: "Change the passphrase that protects your veil key",
		Long: `passwd re-seals your master key under a new passphrase (argon2id, fresh salt). The key
itself does not change: everything you stored stays readable, nothing is re-encrypted or
re-sent. Afterwards only the new passphrase opens the key file; copies of the profile
directory made before still open with the old one, so replace your backups of it too.
The profile's Metal state (metal.json, sealed under the same passphrase) is re-sealed too.

The current passphrase comes from --password-file, $VEIL_PASSWORD_FILE or a prompt, and is
checked before the new one is asked for; the new one from --new-password-file,
$VEIL_NEW_PASSWORD_FILE or a prompt (typed twice). A new passphrase shorter than 12
characters draws a warning.

Examples:
  veil passwd
  veil passwd --password-file old.txt --new-password-file new.txt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, noKey := profile.Load(o.dir(), profile.Overrides{})
			hasMetal := client.Exists(o.dir()) == nil // metal.json is sealed under the same passphrase
			if noKey != nil && !hasMetal {
				return noKey // before any prompt
			}
			if noKey == nil {
				if err := profile.CheckKeyFile(o.dir()); err != nil {
					return err // before any prompt too
				}
			}
			old, err := passphrase(o.passwordFile, false)
			if err != nil {
				return err
			}
			if noKey == nil {
				if err := profile.CheckPassphrase(o.dir(), old); err != nil {
					return err // before the new passphrase is asked for
				}
			}
			if hasMetal {
				// An unsealed metal.json (an earlier veil's) has no passphrase to check: it is
				// sealed under the new one, typed twice.
				if _, err := client.LoadProfile(o.dir(), old); err != nil && !errors.Is(err, client.ErrUnsealed) {
					return err
				}
			}
			nw, err := readPassphrase(newFile, "--new-password-file", envNewPassword, "new passphrase", true)
			if err != nil {
				return err
			}
			if w := profile.WeakPassphrase(nw); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			if noKey == nil {
				if err := profile.ChangePassphrase(o.dir(), old, nw); err != nil {
					return err
				}
			}
			if hasMetal {
				if err := client.ChangePassphrase(o.dir(), old, nw); err != nil {
					return err
				}
			}
			if o.json {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"profile": o.dir(), "changed": true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "passphrase of %s changed; the key and your files are unchanged\n", o.dir())
			return nil
		},
	}
	o.addFlags(c, false)
	c.Flags().StringVar(&newFile, "new-password-file", "", "read the new passphrase from this file (default $"+envNewPassword+", else prompt)")
	return c
}
