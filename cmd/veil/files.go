package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/profile"
)

// The DupLESS client commands: init, put, get, ls, rm, mv, mkdir, find, prune, root. Shared
// plumbing (profile, passphrase, progress, output) is in files_ui.go.

func init() {
	for _, f := range []func() *cobra.Command{newInitCommand, newPutCommand, newGetCommand,
		newLsCommand, newRmCommand, newMvCommand, newMkdirCommand, newFindCommand, newPruneCommand, newTreeRootCommand} {
		register(f)
	}
}

func newInitCommand() *cobra.Command {
	var o clientFlags
	var inviteFile, storageLoc, storeCred, ksCred, transport, ksTimeout string
	var ksURLs []string
	var noKS bool
	c := &cobra.Command{
		Use:   "init",
		Short: "Create your veil key and connect to a key server and a storage service",
		Long: `init creates a random 256-bit master key, seals it with a passphrase (argon2id), and
records where your files go (the storage service) and how to reach the key server that
derives content keys. Everything lands in the profile directory (--config, default
$VEIL_CONFIG or ~/.config/veil).

The simplest way is an invitation written by 'veil serve adduser'. Otherwise name the
storage location and the key server credential yourself.

Storage locations:
  /path/to/dir or local:/path       a local directory
  s3://host:port/bucket[/prefix]    an S3 bucket (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY;
                                    add ?tls=0 for plain HTTP)
  veil://host:port                  veil's deduplicating storage service (--store-credential)
  veil://host1:port,host2:port      the same service on several nodes (spread, failover)

init checks the location before it writes anything: a local directory is created (later
commands never create one: a mistyped $VEIL_STORAGE is an error, not a new empty store),
and a veil:// or s3:// location must answer with the credential given. It also asks the
key server for one key with its credential (one evaluation of the credential's rate
limit), at the URLs later commands will use ($VEIL_KS_URL where set, which like every
environment override is not written into the profile; else --ks-url; else the
credential's): a credential the key server refuses (revoked, unknown, another key server's) fails
init, naming the key server and what was wrong; a key server that cannot be reached, or
that is rate-limiting, is a one-line warning and init goes on (set up offline: puts store
without deduplication until it answers).

The passphrase comes from --password-file, $VEIL_PASSWORD_FILE, or a prompt. Without the
passphrase and the key file nobody, including you, can read what you store: back up the
profile directory.

Examples:
  veil init --invite alice.invite
  veil init --storage /mnt/backup --ks-credential ks.cred
  veil init --storage veil://store.example:7480 --store-credential me.cred --ks-credential ks.cred
  veil init --storage veil://store1:7480,store2:7480 --store-credential me.cred \
      --ks-credential ks.cred --ks-url https://ks1:7443 --ks-url https://ks2:7443   # several nodes (docs/deploy.md)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := profile.InitOptions{Storage: storageLoc, NoKS: noKS, Transport: transport, KSTimeout: ksTimeout, KSURLs: ksURLs}
			var err error
			if opts.Invite, err = readOptional("--invite", inviteFile); err != nil {
				return err
			}
			if opts.StoreCredRaw, err = readOptional("--store-credential", storeCred); err != nil {
				return err
			}
			if opts.KSCredRaw, err = readOptional("--ks-credential", ksCred); err != nil {
				return err
			}
			pass, err := passphrase(o.passwordFile, true)
			if err != nil {
				return err
			}
			if w := profile.WeakPassphrase(pass); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			env := profile.EnvOverrides(os.Getenv)
			opts.Credentials, opts.KSURLOverride = env.Credentials, env.KSURL
			opts.Warn = func(w error) { fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", textMessage(w)) }
			cfg, err := profile.Init(cmd.Context(), o.dir(), pass, opts)
			if err != nil {
				return err
			}
			if o.json {
				out := names("profile", o.dir(), "storage", cfg.Storage)
				out["user"] = cfg.User
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s (storage %s)\nkeep a copy of that directory and your passphrase: without them your files cannot be read\n", o.dir(), cfg.Storage)
			if cfg.NoKS {
				// Said here, once: put does not repeat the profile's choice after every run.
				fmt.Fprintln(cmd.OutOrStdout(), "no key server: every file is stored under a random key, WITHOUT deduplication")
			}
			return nil
		},
	}
	o.addFlags(c, false)
	c.Flags().StringVar(&inviteFile, "invite", "", "invitation file from 'veil serve adduser' (sets storage and credentials)")
	c.Flags().StringVar(&storageLoc, "storage", "", "storage location (see above)")
	c.Flags().StringVar(&storeCred, "store-credential", "", "credential file for a veil:// storage service")
	c.Flags().StringVar(&ksCred, "ks-credential", "", "key server credential file ('veil keyserver client add')")
	c.Flags().StringVar(&transport, "ks-transport", ksclient.DefaultTransport, "key server transport: https or udp")
	c.Flags().BoolVar(&noKS, "no-keyserver", false, "store without a key server: random keys, no deduplication")
	c.Flags().StringSliceVar(&ksURLs, "ks-url", nil, "a key server replica's HTTPS URL (repeatable: derivations spread over them, with failover; default: the credential's URL)")
	c.Flags().StringVar(&ksTimeout, "ks-timeout", "", fmt.Sprintf("wait this long for one key server answer (%d tries) before storing without dedup (default %v; raise it for rate-limited delay modes)", ksclient.DefaultRetries, ksclient.DefaultTimeout))
	return c
}

// readOptional reads the file a flag names ("": none); an error names the flag.
func readOptional(flag, path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return b, nil
}

func newPutCommand() *cobra.Command {
	var o clientFlags
	var sel putSelection
	var to string
	c := &cobra.Command{
		Use:   "put PATH... [DEST] | put PATH... --to DEST",
		Short: "Encrypt and store files and directories",
		Long: `put stores each PATH (a file, a symlink or a directory with everything below it) as
DEST/<name of PATH>. Names and contents are encrypted before they leave this machine;
identical content stored by any user of the same key server and storage service is kept
once.

Where things go (cp's rules, and rclone's explicit form):
  veil put PATH...              into the root
  veil put PATH... DEST         DEST must be an existing stored folder (a mistyped DEST is
                                an error, never a new folder) and must not exist locally
                                (a forgotten destination never swallows a file)
  veil put PATH... --to DEST    DEST is created if needed
A PATH of ".", ".." or "/" stores that folder's contents into DEST (as 'cp -r . DEST').
A stored file and a stored folder never share a name: DEST, or a folder below it, cannot
be where a file is stored, and a file cannot replace a folder.

Modes, modification times, empty directories and symlinks (stored as links, never
followed) are kept; FIFOs and devices are stored as metadata (as restic does) and
recreated by get (devices where you may create them). Sockets hold no data: they are
skipped, counted in the summary ("1 socket not stored"; "not_stored" in --json), as
restic and rsync do, and are no failure. What cannot be stored (unreadable files, names
over 255 bytes, a folder where a file of its name is stored: nothing below it is
stored either) is reported per file without stopping the run (exit status 3).

A file already stored at its destination with the same size, modification time and mode
is not read again (like rclone); --force reads every file. The profile keeps an encrypted
cache of what it stored (PROFILE/cache/, safe to delete), so a put of an unchanged tree
reads nothing from the storage service, and a file this device stored or checked before
is also compared by ctime and inode (as restic does): a change that restored the
modification time (cp -p, rsync -t, touch -r onto a same-size file) is seen. Use --force
for files the cache does not know yet, or on file systems with coarse timestamps (FAT)
where a file can change twice within one tick. Without --force, content that did not
change is never sent twice; --force sends every chunk of the files it is given again, which
repairs a file whose stored content 'veil check' reports damaged.

--exclude PATTERN (repeatable) skips every file or directory whose name, or whose path
below a PATH argument, matches PATTERN (shell patterns: *, ?, [...]; a directory that
matches is skipped with everything below it). --exclude-file FILE reads more patterns,
one per line (blank lines and lines starting with # are ignored). --files-from FILE
reads PATHs, one per line ("-": standard input), after those on the command line.
--dry-run (-n) lists what would be stored, and where, without storing anything (files
put would skip as unchanged are listed too).

If the key server cannot be reached (or is rate-limiting, or answers something that fails
verification), files are stored under random keys: readable, just not deduplicated. The
summary says how many and why, and put exits with status 4, even with -q (--json:
fallback_files). A profile made with 'init --no-keyserver' stores every file that way by
choice: init says so once, and put neither repeats it nor exits 4 for it. Exit status 3
means some files could not be stored, 1 that put failed.

Examples:
  veil put ~/Documents
  veil put report.pdf notes.txt work/2026     # work/2026 exists in storage
  veil put *.txt --to notes                     # creates notes if needed
  veil put ~/src --exclude node_modules --exclude '*.o' --exclude 'build/*'
  veil put -n ~/src --exclude-file ~/.veilignore
  find ~/photos -name '*.jpg' -newer stamp | veil put --files-from - --to photos
  veil put -j 16 --json /srv/data backups`,
		Args: cobra.ArbitraryArgs, // PATHs may come from --files-from
		RunE: func(cmd *cobra.Command, args []string) error {
			srcs, dest, lastArg := args, to, false
			if !cmd.Flags().Changed("to") && len(args) > 1 {
				lastArg = true
				srcs, dest = args[:len(args)-1], args[len(args)-1]
				if _, err := os.Lstat(dest); err == nil {
					return fmt.Errorf("%s exists here, but as the last argument it names the destination in storage: "+
						"use --to DEST to say where the files go (veil put %s --to DEST)", dest, strings.Join(args, " "))
				}
			}
			if err := sel.apply(&o, &srcs); err != nil {
				return err
			}
			if len(srcs) == 0 {
				return argError{errors.New("nothing to store: give a PATH (or --files-from FILE)"), cmd}
			}
			for _, s := range srcs {
				if _, err := os.Lstat(s); err != nil {
					return err
				}
			}
			var pre *dupless.Prescan
			if !sel.dryRun {
				// The walk runs while the key file is unlocked, not while a passphrase
				// prompt waits: a walk older than the prompt would judge a file saved
				// meanwhile by its old lstat, unchanged (found by review).
				o.afterPass = func() { pre = dupless.StartPrescan(srcs, dest, o.exclude) }
			}
			cl, done, ui, err := o.open(cmd, "storing")
			if err != nil {
				return err
			}
			defer done()
			if lastArg {
				// The destination as the user typed it (found by a user walkthrough:
				// 'put src /src' said "src does not exist in storage", the local folder's
				// name, and of a stored file it said to create it with mkdir).
				var nf *dupless.NotFolderError
				switch err := cl.NeedFolder(cmd.Context(), dest); {
				case errors.As(err, &nf) && nf.IsFile:
					return fmt.Errorf("%s is a stored file: as the last argument, the destination must be an existing folder", dest)
				case errors.As(err, &nf):
					return fmt.Errorf("%s does not exist in storage: as the last argument, the destination must be an existing folder "+
						"(create it with --to %s, or 'veil mkdir %s')", dest, dest, dest)
				case err != nil:
					return err
				}
			}
			if sel.dryRun {
				return printPlan(cmd.OutOrStdout(), &o, cl, srcs, dest)
			}
			sum, err := cl.PutScanned(cmd.Context(), pre)
			ui.finish()
			if o.interruptedSummary(cmd, err, sum, sum) {
				return err
			}
			return o.report(cmd.OutOrStdout(), "stored", sum, err)
		},
	}
	o.addFlags(c, true)
	c.Flags().StringVar(&to, "to", "", "destination directory in storage (default: the root)")
	c.Flags().BoolVar(&o.force, "force", false, "read every file, even those whose size, modification time and mode match what is stored, and send all its content again")
	c.Flags().StringArrayVar(&o.exclude, "exclude", nil, "skip files and directories matching this pattern (name or path below PATH; repeatable)")
	sel.addPutFlags(c)
	return c
}

func newGetCommand() *cobra.Command {
	var o clientFlags
	var overwrite string
	var pin pinFlags
	c := &cobra.Command{
		Use:   "get SRC [DEST|-]",
		Short: "Retrieve, verify and decrypt files or directories",
		Long: `get retrieves SRC (a file, a symlink or a directory, recursively; "/" is everything) to
DEST. Every byte is verified before it reaches its final name: each file is written to a
temporary file and renamed only when its key record, chunk tags and guarded decryption
all check out. A tampered, swapped or truncated object fails that file, with its name,
and the other files still arrive (exit status 3). A get of one file that fails retrieved
nothing: one line, exit status 1 (3 if the file is damaged). A disk that fills up stops
the get at the first file it has no room for (exit status 1): make room and run it again.

Where things go (restic's restore rules):
  DEST missing              DEST becomes SRC (default DEST: the name of SRC here)
  DEST an existing folder   a file goes into it; a folder goes into it as DEST/<name>,
                            unless DEST already has SRC's name, which it then updates:
                            'veil get Documents Documents' never makes Documents/Documents;
                            nor does a folder an interrupted or failed get of SRC made
                            (run the same command again: it finishes that folder)
  DEST/ (ending in /)       a folder, made if missing: a file goes into it
  DEST -                    a file's content goes to standard output (as 'veil cat')
  "/" as SRC                everything, into DEST (default: the current directory)

Existing entries below DEST are handled by --overwrite:
  always      replace files and symlinks (default)
  if-changed  replace only those whose size, modification time or mode (a symlink: its
              target) differ from what is stored
  never       leave every existing entry as it is
Whatever --overwrite says, get never writes through a symlink (one in the way is
replaced, not followed; a DEST that is a symlink is refused), never replaces a directory
with a file, and never replaces a device, named pipe or socket (/dev/stdout included:
give - instead). The summary counts what was kept.

--include PATTERN and --exclude PATTERN (repeatable; shell patterns matched against each
entry's name and its path below SRC) choose what is retrieved: an excluded directory is
skipped with everything below it; with --include only matching entries, and everything
below a matching directory, are retrieved (with the folders on their way).

Examples:
  veil get Documents
  veil get --include '*.pdf' --exclude drafts Documents
  veil get Documents/report.pdf /tmp/report.pdf
  veil get Documents/report.pdf - | less
  veil get --overwrite if-changed Documents ~/Documents
  veil get / restore-dir
  veil get --version 1 Documents/report.pdf /tmp/report-v1.pdf   # see 'veil log'
  veil get --at "2026-11-01 18:00" Documents old-documents`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.overwrite, err = dupless.ParseOverwrite(overwrite); err != nil {
				return argError{err, cmd} // a flag's value: a usage mistake, exit 2
			}
			src := args[0]
			dest := lastElem(src)
			if len(args) == 2 {
				dest = args[1]
			}
			if dest == "-" {
				return catTo(cmd, &o, &pin, src)
			}
			cl, done, ui, err := o.open(cmd, "retrieving")
			if err != nil {
				return err
			}
			defer done()
			if err := pin.apply(cmd.Context(), cl, src); err != nil {
				return err
			}
			sum, err := cl.GetInto(cmd.Context(), src, dest)
			ui.finish()
			return o.report(cmd.OutOrStdout(), "retrieved", sum, deletedHint(cmd.Context(), cl, src, err))
		},
	}
	o.addFlags(c, true)
	c.Flags().StringVar(&overwrite, "overwrite", "always", "existing files and links at DEST: always, if-changed or never (see above)")
	c.Flags().StringArrayVar(&o.include, "include", nil, "retrieve only entries matching this pattern (name or path below SRC; repeatable)")
	c.Flags().StringArrayVar(&o.getExclude, "exclude", nil, "skip entries matching this pattern (name or path below SRC; repeatable)")
	pin.add(c, true)
	return c
}

// lastElem is the name a stored path gets locally ("." for the root).
func lastElem(p string) string {
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return "."
	}
	return p[strings.LastIndex(p, "/")+1:]
}
