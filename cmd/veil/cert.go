package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/pki"
)

// certKind is what differs between the servers' `cert` commands (one shape for all).
type certKind struct {
	cmd      string                  // the command, e.g. "veil store cert"
	dir      string                  // an example directory
	host     string                  // an example host to add
	validity time.Duration           // init's, the default
	tlsDir   func(dir string) string // where DIR keeps the certificates (nil: DIR itself)
	copies   string                  // what to copy server.crt to, for several machines ("" for one)
}

// newCertCommand is `veil KIND cert --dir DIR [--host H]...`: re-issue the server
// certificate from the CA in DIR (pki.ReissueServer). The caller adds --dir as its other
// subcommands have it, bound to dir.
func newCertCommand(k certKind, dir *string) *cobra.Command {
	var o pki.ReissueOptions
	copies := ""
	if k.copies != "" {
		copies = "\nThen copy the new server.crt to " + k.copies + " (the key is\nthe same in every copy)."
	}
	c := &cobra.Command{
		Use:   "cert --dir DIR [--host NAME|IP]... [--valid DURATION]",
		Short: "Re-issue the server certificate from the CA: add a host, or renew it before it ends",
		Long: fmt.Sprintf(`cert replaces the server certificate in DIR with a new one from the same CA for the
same key, naming the current certificate's hosts and every --host, valid for --valid
from now (default %s, as init). Clients trust the CA, not the certificate: their
credentials keep working unchanged. A running server serves the new certificate from
its next connection, without a restart.%s

  %s --dir %s --host %s
  %s --dir %s        # renew: same hosts, from now

It needs the CA's key (ca.key, which init wrote beside ca.crt). The CA is kept (its end
is printed); a new CA means new credentials for every client (docs/deploy.md,
Certificates).`,
			humanDuration(k.validity), copies, k.cmd, k.dir, k.host, k.cmd, k.dir),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, h := range o.Hosts {
				if err := pki.CheckHost(h); err != nil {
					return usageError(err.Error())
				}
			}
			if o.OnlyHosts && len(o.Hosts) == 0 {
				return usageError("--only-hosts names the --host values only: give at least one --host")
			}
			if o.Validity <= 0 {
				return usageError(fmt.Sprintf("--valid %v: want a positive duration (e.g. 8760h, a year)", o.Validity))
			}
			if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
				return fmt.Errorf("--dir %s: no such directory", *dir)
			}
			d := *dir
			if k.tlsDir != nil {
				d = k.tlsDir(d)
			}
			r, err := pki.ReissueServer(d, o)
			if err != nil {
				return err
			}
			printReissued(cmd, r)
			return nil
		},
	}
	c.Flags().StringSliceVar(&o.Hosts, "host", nil, "DNS name or IP address to add to the certificate (repeatable)")
	c.Flags().BoolVar(&o.OnlyHosts, "only-hosts", false, "name the --host values only, dropping the current certificate's names")
	c.Flags().DurationVar(&o.Validity, "valid", k.validity, "lifetime from now (cut to the CA's own end)")
	return c
}

func printReissued(cmd *cobra.Command, r *pki.Reissued) {
	w := cmd.OutOrStdout()
	var hosts []string
	hosts = append(hosts, r.Cert.DNSNames...)
	for _, ip := range r.Cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	fmt.Fprintf(w, "re-issued %s for %s\n", r.Path, strings.Join(hosts, ", "))
	if len(r.Added) > 0 {
		fmt.Fprintf(w, "added: %s\n", strings.Join(r.Added, ", "))
	}
	if len(r.Dropped) > 0 {
		fmt.Fprintf(w, "dropped: %s\n", strings.Join(r.Dropped, ", "))
	}
	until := r.Cert.NotAfter.UTC().Format(time.DateOnly)
	if r.CutToCA {
		fmt.Fprintf(w, "valid until %s: the CA's own end, which cuts --valid short\n", until)
	} else {
		fmt.Fprintf(w, "valid until %s; the CA until %s\n", until, r.CAExpiry.UTC().Format(time.DateOnly))
	}
	fmt.Fprintln(w, "clients keep their credentials; a running server serves it from its next connection")
}

// humanDuration writes a whole number of years as such (init's validities).
func humanDuration(d time.Duration) string {
	const year = 365 * 24 * time.Hour
	if d%year == 0 {
		if d == year {
			return "1 year"
		}
		return fmt.Sprintf("%d years", d/year)
	}
	return d.String()
}
