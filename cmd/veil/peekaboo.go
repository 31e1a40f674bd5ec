package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/words"
)

func init() { register(newPeekabooCommand) }

func newPeekabooCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "peekaboo",
		Short: "Private key-value search over two servers (Peekaboo)",
		Long: `peekaboo publishes and searches key-value pairs (e.g. file name -> where to get it) split
over two servers: the K-server holds keys, the V-server values, owners and clients. Neither
alone can bind a key to its value or its owner; the K-server sees queries but not who asked,
the V-server sees who asked but not the query (docs/design-peekaboo.md).

  veil peekaboo join alice.pkb                         # the credential from the V-server admin
  veil peekaboo publish report.pdf host-a:/srv/report.pdf
  veil peekaboo publish --from pairs.tsv               # KEY<TAB>VALUE per line, any number
  veil peekaboo search report --substring --advanced
  veil peekaboo list
  veil peekaboo unpublish report.pdf

Servers: 'veil peekaboo kserver ...', 'veil peekaboo vserver ...', or 'veil serve' (both).`,
	}
	var o pkbFlags
	c.PersistentFlags().StringVar(&o.config, "config", "", "profile directory (default $VEIL_CONFIG or ~/.config/veil)")
	c.PersistentFlags().BoolVar(&o.json, "json", false, "print JSON")
	c.AddCommand(newPkbJoinCommand(&o), newPkbPublishCommand(&o), newPkbUnpublishCommand(&o),
		newPkbListCommand(&o), newPkbSearchCommand(&o), newPkbKServerCommand(), newPkbVServerCommand())
	return c
}

type pkbFlags struct {
	config string
	json   bool
}

func (o *pkbFlags) dir() string { return profileDir(o.config) }

func (o *pkbFlags) with(fn func(*client.Client) error) error {
	c, err := client.Open(o.dir())
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

func (o *pkbFlags) print(w io.Writer, v any, text string) error {
	if o.json {
		return json.NewEncoder(w).Encode(v)
	}
	_, err := io.WriteString(w, text)
	return err
}

func newPkbJoinCommand(o *pkbFlags) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "join CREDENTIAL-FILE",
		Short: "Store your Peekaboo credential in the profile (adds a fresh owner key)",
		Long: `join stores the credential the V-server's administrator gave you as <profile>/peekaboo.cred,
adding an owner key that only this profile holds (it seals your keys for 'list'). The
V-server's admin.cred is refused: it adds users ('veil peekaboo vserver adduser') and is
no user's credential.

  veil peekaboo join alice.pkb
  veil peekaboo join alice.pkb --config ~/.config/veil-work`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			path, err := client.Save(o.dir(), b, force)
			if errors.Is(err, wire.ErrMalformed) {
				return fmt.Errorf("%s is not a Peekaboo user credential (join takes the file 'veil peekaboo vserver adduser' wrote, or <dir>/invites/NAME.peekaboo of 'veil serve'): %w", args[0], err)
			}
			if errors.Is(err, client.ErrAdminCred) {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if err != nil {
				return err
			}
			cl, err := client.Open(o.dir())
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := cl.RegisterClientKey(cmd.Context()); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: client key not registered yet (%v); run join again when the V-server is up to receive pseudonyms\n", err)
			}
			return o.print(cmd.OutOrStdout(), map[string]string{"credential": path, "user": cl.User(), "kserver_fingerprint": cl.KServerFingerprint()},
				fmt.Sprintf("stored %s for %s; K-server key fingerprint %s (compare it with the K-server operator's)\n", path, cl.User(), cl.KServerFingerprint()))
		},
	}
	c.Flags().BoolVar(&force, "force", false, "replace an existing credential (pairs published under its owner key can no longer be listed)")
	return c
}

func newPkbPublishCommand(o *pkbFlags) *cobra.Command {
	var from string
	var showProgress bool
	var acl, pseudFor []string
	c := &cobra.Command{
		Use:   "publish KEY VALUE | --from FILE",
		Short: "Publish key-value pairs (the key goes sealed to the K-server, the value to the V-server)",
		Long: `publish stores pairs: the key sealed to the K-server, the value with the V-server. --acl
limits who may see the values (client names; default every registered user). --from reads
one pair per line, KEY<TAB>VALUE ('-' for stdin), sent in chunks of 4096 pairs; each
acknowledged chunk is durable on both servers (on a terminal, or with --progress, a line
says how many are published after each). Blank lines and lines starting with # are
skipped; a line without a TAB is a KEY with an empty value (a space does not separate).

  veil peekaboo publish holiday.jpg nas:/photos/2026/holiday.jpg
  veil peekaboo publish plan.txt host-b:/plans --acl bob --acl carol
  veil peekaboo publish --from pairs.tsv --json
  veil peekaboo publish salary.xls hr:/x --pseudonym-for bob   # K-server enforced, see --pseudonyms`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var pairs []client.Pair
			switch {
			case from != "" && len(args) == 0:
				r, err := openInput(from)
				if err != nil {
					return err
				}
				defer r.Close()
				if pairs, err = client.ReadPairs(r, acl); err != nil {
					return fmt.Errorf("%s: %w", from, err)
				}
			case from == "" && len(args) == 2:
				pairs = []client.Pair{{Key: args[0], Value: []byte(args[1]), ACL: acl}}
			default:
				return argError{errors.New("give KEY VALUE, or --from FILE"), cmd}
			}
			return o.with(func(c *client.Client) error {
				for _, name := range pseudFor {
					if err := c.Grant(cmd.Context(), name); err != nil {
						return fmt.Errorf("grant a pseudonym to %s: %w", name, err)
					}
					pub, err := c.PseudonymPub(name)
					if err != nil {
						return err
					}
					for i := range pairs {
						pairs[i].Pseudonyms = append(pairs[i].Pseudonyms, pub)
					}
				}
				var progress func(int)
				if len(pairs) > wire.MaxChunk && !o.json && (showProgress || isTerminal(os.Stderr)) {
					progress = func(n int) { fmt.Fprintf(cmd.ErrOrStderr(), "veil: published %d of %d pairs\n", n, len(pairs)) }
				}
				n, err := c.Publish(cmd.Context(), pairs, 0, progress)
				if err != nil {
					return publishErr(cmd, n, len(pairs), from, err)
				}
				return o.print(cmd.OutOrStdout(), map[string]int{"published": n}, "published "+plural(n, "pair", "pairs")+"\n")
			})
		},
	}
	c.Flags().StringVar(&from, "from", "", "read KEY<TAB>VALUE lines from this file ('-': stdin)")
	c.Flags().BoolVar(&showProgress, "progress", false, fmt.Sprintf("print how many pairs are published after each chunk of %d, even when stderr is not a terminal", wire.MaxChunk))
	c.Flags().StringArrayVar(&acl, "acl", nil, "client allowed to see the values (repeatable; default everyone registered)")
	c.Flags().StringArrayVar(&pseudFor, "pseudonym-for", nil, "K-server access control: only this client's pseudonym matches the pairs (repeatable, at most 8)")
	return c
}

// publishErr is the error of a publication that stopped after n of total pairs: it says
// which pairs are published and, unless the V-server's answer says what became of the
// chunk in flight (refused: none of its pairs is kept; not acknowledged by the K-server:
// listed as unacknowledged until the V-server has removed them), that those pairs may be
// published or listed without being published (the client got no answer, or a V-server
// before session 17 kept them inert), so that running the same command again does not
// silently publish pairs twice. When a signal stopped it, main replaces the error by
// "interrupted": the count goes to stderr first.
func publishErr(cmd *cobra.Command, n, total int, from string, err error) error {
	done := fmt.Sprintf("published %d of %s", n, plural(total, "pair", "pairs"))
	if n > 0 && from != "" {
		done += fmt.Sprintf(" (the first %d of %s, in order)", n, from)
	}
	hint := "" // the V-server's answer says what became of the pairs in flight
	if !client.Refused(err) && !client.Settling(err) {
		hint = "; the pairs in flight may be published, or listed without being published: see 'veil peekaboo list' (it marks those the V-server is removing as unacknowledged) before publishing them again"
	}
	if n > 0 {
		hint += "; publishing the same pairs again would publish the first " + strconv.Itoa(n) + " twice"
	}
	if cmd.Context().Err() != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "veil: %s before the interruption%s\n", done, hint)
	}
	return fmt.Errorf("%s: %w%s", done, err, hint)
}

func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(path)
}

func newPkbUnpublishCommand(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "unpublish KEY [VALUE]",
		Short: "Remove your pairs with KEY (and VALUE, if given) from both servers",
		Long: `unpublish removes your own pairs with that key (only those with that value, if given).

  veil peekaboo unpublish holiday.jpg
  veil peekaboo unpublish holiday.jpg nas:/photos/2026/holiday.jpg`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var value []byte
			if len(args) == 2 {
				value = []byte(args[1])
			}
			return o.with(func(c *client.Client) error {
				n, err := c.Unpublish(cmd.Context(), args[0], value)
				if err != nil {
					return err
				}
				if n == 0 {
					what := fmt.Sprintf("key %q", args[0])
					if value != nil {
						what += fmt.Sprintf(" and value %q", args[1])
					}
					return fmt.Errorf("none of your pairs has %s; nothing removed ('veil peekaboo list' shows your pairs)", what)
				}
				return o.print(cmd.OutOrStdout(), map[string]int{"removed": n}, "removed "+plural(n, "pair", "pairs")+"\n")
			})
		},
	}
}

type pkbPairJSON struct {
	ID      string   `json:"id"`
	Key     string   `json:"key,omitempty"`
	Value   string   `json:"value"`
	ACL     []string `json:"acl,omitempty"`
	Unacked bool     `json:"unacknowledged,omitempty"`
}

func newPkbListCommand(o *pkbFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List your own pairs (keys recovered with your owner key)",
		Long: `list shows the pairs you published: key, value and ACL. It does not show which pseudonyms
a pair requires (--pseudonym-for): only the K-server holds them. To change a pair, unpublish
it and publish it again.

A pair marked "unacknowledged" (--json: "unacknowledged": true) was in a publication whose
relay to the K-server got no answer: it was never published for you, and the V-server
removes it from both servers once the K-server answers; publish it again.

  veil peekaboo list
  veil peekaboo list --json | jq -r .key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.with(func(c *client.Client) error {
				l, err := c.List(cmd.Context())
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				for _, p := range l {
					j := pkbPairJSON{ID: hex.EncodeToString(p.ID[:]), Key: p.Key, Value: string(p.Value), ACL: p.ACL, Unacked: p.Unacked}
					acl := ""
					if len(p.ACL) > 0 {
						acl = "\t(acl: " + strings.Join(p.ACL, ",") + ")"
					}
					if p.Unacked {
						acl += "\t(unacknowledged: the K-server never answered its publication; being removed)"
					}
					if err := o.print(w, j, fmt.Sprintf("%s\t%s%s\n", p.Key, p.Value, acl)); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func newPkbSearchCommand(o *pkbFlags) *cobra.Command {
	var so client.SearchOptions
	var pseud, refresh, private bool
	c := &cobra.Command{
		Use:   "search QUERY [--substring] [--advanced] [--limit N] [--private-query]",
		Short: "Search keys: exact (default) or substring; values you may see come back",
		Long: `search seals QUERY and a one-time key to the K-server (the V-server relays it without
your identity) and prints the values of matching pairs you may see; --advanced also prints
the matched keys (encrypted by the K-server for you alone). At most --limit results (the
K-server's first matches; V-server ACLs are applied after).

Keys and values are other users' bytes: on a terminal, control characters in them are
shown escaped (\n, \033), so that no published value can move your cursor or send your
terminal escape sequences; into a pipe or file they are written as published, and --json
gives them exactly.

--private-query hides the query from both servers (exact match only): each server gets
one half of a distributed point function over a table both hold, and the V-server then
releases the values of the pair ids found (docs/design-peekaboo.md, "Private queries").

  veil peekaboo search holiday.jpg
  veil peekaboo search --private-query holiday.jpg --json
  veil peekaboo search holiday --substring --advanced --limit 20
  veil peekaboo search report --substring --json
  veil peekaboo search salary.xls --pseudonyms`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if private && (so.Substring || pseud || refresh) {
				return argError{errors.New("--private-query is exact match without pseudonyms: drop --substring and --pseudonyms"), cmd}
			}
			if so.Limit < 1 || so.Limit > wire.MaxLimit {
				return argError{fmt.Errorf("--limit %d: give 1..%d", so.Limit, wire.MaxLimit), cmd}
			}
			return o.with(func(c *client.Client) error {
				search := c.Search
				if private {
					search = c.PrivateSearch
				}
				if pseud || refresh {
					ps, err := c.CachedPseudonyms(cmd.Context(), o.dir(), refresh)
					if err != nil {
						return err
					}
					so.Pseudonyms = ps
				}
				r, err := search(cmd.Context(), args[0], so)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if o.json {
					out := []pkbPairJSON{}
					for _, f := range r.Found {
						out = append(out, pkbPairJSON{ID: hex.EncodeToString(f.ID[:]), Key: f.Key, Value: string(f.Value)})
					}
					return json.NewEncoder(w).Encode(map[string]any{"query": args[0], "results": out,
						"reply_bytes": r.ReplyBytes, "kserver_fingerprint": c.KServerFingerprint(), "private_query": private})
				}
				tty := false
				if f, ok := w.(*os.File); ok {
					tty = isTerminal(f)
				}
				for _, f := range r.Found {
					fmt.Fprint(w, searchLine(f.Key, string(f.Value), so.Advanced, tty))
				}
				if len(r.Found) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "no match")
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&so.Substring, "substring", false, "match keys containing QUERY (default: equal to it)")
	c.Flags().BoolVar(&so.Advanced, "advanced", false, "also return the matched keys")
	c.Flags().IntVar(&so.Limit, "limit", client.DefaultLimit, fmt.Sprintf("most results (1..%d)", wire.MaxLimit))
	c.Flags().BoolVar(&private, "private-query", false, "hide QUERY from both servers (two-server PIR; exact match only)")
	c.Flags().BoolVar(&pseud, "pseudonyms", false, "prove the pseudonyms owners granted you (cached in the profile)")
	c.Flags().BoolVar(&refresh, "refresh-pseudonyms", false, "fetch and open your pseudonym grants again (implies --pseudonyms)")
	return c
}

// searchLine is one result of a search as text: the value, after its key with --advanced.
// On a terminal (tty) control characters are escaped in place (words.Escape): keys and
// values are other users' bytes, and printed raw one could forge output lines or send the
// terminal escape sequences.
func searchLine(key, value string, advanced, tty bool) string {
	if tty {
		key, value = words.Escape(key), words.Escape(value)
	}
	if advanced {
		return key + "\t" + value + "\n"
	}
	return value + "\n"
}
