package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dustin/go-humanize"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/profile"
	"github.com/veil-project/veil/internal/words"
	"golang.org/x/term"
)

// clientFlags are the flags every file command shares.
type clientFlags struct {
	config       string
	passwordFile string
	json         bool
	quiet        bool
	verbose      bool
	jobs         int
	force        bool
	exclude      []string
	overwrite    dupless.Overwrite
	include      []string // get --include
	getExclude   []string // get --exclude
	noRootCheck  bool
	entries      string // mv, rm: the verb of per-entry progress ("moved"), "" for none
	progress     bool   // mv, rm --progress: progress lines even when stderr is no terminal
	total        entryTotal
	shown        atomic.Int64 // per-file failures said on stderr as they happened (open's File event)
	afterPass    func()       // run by open once the passphrase is read (put: its prescan)
}

func (o *clientFlags) addFlags(c *cobra.Command, transfers bool) {
	c.Flags().StringVar(&o.config, "config", "", "profile directory (default $VEIL_CONFIG or ~/.config/veil)")
	c.Flags().StringVar(&o.passwordFile, "password-file", "", "read the passphrase from this file (default $VEIL_PASSWORD_FILE, else prompt)")
	c.Flags().BoolVar(&o.json, "json", false, `machine-readable output (JSON; a failure ends it with {"error": ..., "exit_code": N}; see 'veil --help')`)
	c.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "log what happens (to stderr)")
	c.Flags().BoolVar(&o.noRootCheck, "no-root-check", false, "warn instead of failing when the storage service shows a file, or a tree root, older than this device has seen (rollback)")
	if transfers {
		c.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
		o.jobs = dupless.DefaultJobs()
		c.Flags().VarP((*jobsValue)(&o.jobs), "jobs", "j", "files transferred in parallel, at least 1 (at most 2 x cores of them over 1 MiB)")
	}
}

// jobsValue is -j's value: a count of at least 1, checked as the flag is read, so that
// -j 0 or -j -1 is a usage mistake naming the flag (the default silently replaced them).
type jobsValue int

func (j *jobsValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return errors.New("give a whole number")
	case n < 1:
		return errors.New("give at least 1")
	}
	*j = jobsValue(n)
	return nil
}

func (j *jobsValue) String() string { return strconv.Itoa(int(*j)) }
func (j *jobsValue) Type() string   { return "int" }

func (o *clientFlags) dir() string { return profileDir(o.config) }

// profileDir is the --config flag, else $VEIL_CONFIG, else $XDG_CONFIG_HOME/veil, else
// ~/.config/veil (os.UserConfigDir), else .veil.
func profileDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv(profile.EnvConfig); d != "" {
		return d
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return ".veil"
	}
	return filepath.Join(d, "veil")
}

// progressUI shows a byte progress bar on stderr when it is a terminal.
type progressUI struct {
	bar   *progressbar.ProgressBar
	files atomic.Int64
}

func (u *progressUI) finish() {
	if u != nil && u.bar != nil {
		u.bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
}

// open unlocks the profile and returns a connected client. what names the progress bar
// ("" for none).
func (o *clientFlags) open(cmd *cobra.Command, what string) (*dupless.Client, func(), *progressUI, error) {
	if _, err := profile.Load(o.dir(), profile.Overrides{}); err != nil {
		return nil, nil, nil, err // a missing profile is said before any passphrase prompt
	}
	if err := profile.CheckKeyFile(o.dir()); err != nil {
		return nil, nil, nil, err // so is a missing key file
	}
	pass, err := passphrase(o.passwordFile, false)
	if err != nil {
		return nil, nil, nil, err
	}
	if o.afterPass != nil {
		o.afterPass()
	}
	ui := &progressUI{}
	var ev dupless.Events
	if what != "" && !o.quiet && !o.json && isTerminal(os.Stderr) {
		ui.bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(what), progressbar.OptionShowBytes(true),
			progressbar.OptionUseIECUnits(true), // MiB, as the summaries count (humanBytes), not MB
			progressbar.OptionThrottle(100_000_000), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
		ev.Total = func(files int, bytes int64) { ui.bar.ChangeMax64(bytes) }
		ev.Bytes = func(n int64) { ui.bar.Add64(n) }
	}
	log := commandLog(os.Stderr, o.verbose) // warnings (a skipped foreign entry, --no-root-check findings) always show
	every := o.entryProgress()
	ev.File = func(path string, err error) {
		if n := ui.files.Add(1); every != nil {
			every(n)
		}
		// After Ctrl-C every file in flight fails with "context canceled": main says
		// "interrupted" once instead of a line per file.
		if err != nil && !o.json && cmd.Context().Err() == nil {
			if ui.bar != nil {
				ui.bar.Clear()
			}
			fmt.Fprintf(os.Stderr, "veil: %s: %s\n", words.Escape(path), textMessage(err))
			o.shown.Add(1)
		}
	}
	if every != nil {
		ev.Total = func(files int, _ int64) { o.total.Store(int64(files)) }
	}
	cl, done, err := profile.Open(cmd.Context(), o.dir(), pass, profile.ClientOptions{Overrides: profile.EnvOverrides(os.Getenv), Jobs: o.jobs, Events: ev, Logger: log,
		Force: o.force, Exclude: o.exclude, Overwrite: o.overwrite, GetInclude: o.include, GetExclude: o.getExclude, NoRootCheck: o.noRootCheck})
	return cl, done, ui, err
}

// report prints a transfer summary (text or JSON) and turns per-file failures into exit 3.
func (o *clientFlags) report(out io.Writer, verb string, s *dupless.Summary, err error) error {
	if err != nil {
		// One line, and with --json the error object (jsonout.go): no summary of a run
		// that failed as a whole, in either form.
		return err
	}
	perr := s.Err()
	if o.json {
		json.NewEncoder(out).Encode(s)
	} else if !o.quiet || perr != nil {
		fmt.Fprintf(out, "%s %s, %s, %s, ", verb, plural(s.Files, "file", "files"), plural(s.Dirs, "dir", "dirs"), plural(s.Symlinks, "link", "links"))
		if s.Special > 0 {
			fmt.Fprintf(out, "%s, ", plural(s.Special, "FIFO/device", "FIFOs/devices"))
		}
		fmt.Fprintf(out, "%s in %s", humanBytes(s.Bytes), s.Duration.Round(1e6))
		if verb == "stored" {
			fmt.Fprintf(out, ": %s, %d sent, %d already stored; %s sent", plural(s.Chunks, "chunk", "chunks"), s.ChunksUploaded, s.ChunksKept, humanBytes(s.BytesUploaded))
			if s.Unchanged > 0 {
				fmt.Fprintf(out, "; %s unchanged (not read)", plural(s.Unchanged, "file", "files"))
			}
			if s.Excluded > 0 {
				fmt.Fprintf(out, "; %d excluded", s.Excluded) // "1 excluded", "2 excluded": no noun
			}
			fmt.Fprint(out, notStored(s.NotStored))
			if n := len(s.Interrupted); n > 0 {
				fmt.Fprintf(out, "; %s not stored: interrupted", plural(n, "file", "files"))
			}
			if s.ChangedWhileRead > 0 {
				fmt.Fprintf(out, "; %s changed while read (stored as read; the next put stores again)", plural(s.ChangedWhileRead, "file", "files"))
			}
		}
		fmt.Fprintln(out)
		for why, n := range s.Fallback {
			if why == dupless.ErrNoKeyServer.Error() {
				continue // the profile's choice, said once by init: not a warning after every put
			}
			fmt.Fprintf(out, "%s stored WITHOUT deduplication (random key): %s\n", plural(n, "file", "files"), why)
		}
		if s.Kept > 0 {
			fmt.Fprintf(out, "%s already there, kept (--overwrite)\n", plural(s.Kept, "file", "files"))
		}
	}
	if msg, ok := o.named(s); ok {
		return exitError{msg, 3}
	}
	return runStatus(s)
}

// interruptedSummary prints the summary of a put or sync (sum) that Ctrl-C or SIGTERM
// stopped while it was storing (a Duration says the run got that far), before main's
// "interrupted" and its exit status: what it stored, which its snapshot keeps, and how
// many files it left in flight, apart from real failures (found by user walkthroughs:
// only "interrupted" was said; then --json listed every file in flight as an error). v is
// what --json prints: put's summary, sync's result. It reports whether err was that.
func (o *clientFlags) interruptedSummary(cmd *cobra.Command, err error, sum *dupless.Summary, v any) bool {
	if err == nil || cmd.Context().Err() == nil || sum == nil || sum.Duration == 0 {
		return false
	}
	if o.json {
		json.NewEncoder(cmd.OutOrStdout()).Encode(v)
	} else {
		o.report(cmd.OutOrStdout(), "stored", sum, nil)
	}
	return true
}

// named is the message of a transfer's per-file failures when each has had its line on
// stderr already: it counts them rather than say the first again (found by a user
// walkthrough: a single failure was printed twice). ok is false when some failure had no
// line (with --json, or a folder's mode it could not set).
func (o *clientFlags) named(s *dupless.Summary) (msg string, ok bool) {
	if s == nil || len(s.Errors) == 0 || o.json || o.shown.Load() != int64(len(s.Errors)) {
		return "", false
	}
	return plural(len(s.Errors), "file", "files") + " failed (named above)", true
}

// runStatus is the exit status of a transfer that went through, as its summary s says:
// 3 when some files failed, 4 when some were stored without deduplication.
func runStatus(s *dupless.Summary) error {
	if s == nil {
		return nil
	}
	if perr := s.Err(); perr != nil {
		return exitError{perr.Error(), 3}
	}
	if n := s.FallbackN; n > 0 {
		return exitError{fmt.Sprintf("%s stored without deduplication (random key): %s", plural(n, "file", "files"), mainReason(s.Fallback)),
			exitNoDedup}
	}
	return nil
}

// exitNoDedup is put's exit status when every file was stored but some under a random key
// (the key server was down, rate-limited, or its answer failed verification).
const exitNoDedup = 4

// mainReason is the reason most files fell back for (ties: the first in order).
func mainReason(m map[string]int) string {
	best, bn := "", 0
	for why, n := range m {
		if n > bn || n == bn && why < best {
			best, bn = why, n
		}
	}
	return best
}

// notStored says what put skipped as holding nothing to store ("; 1 socket not stored"),
// or nothing.
func notStored(kinds map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(&b, "; %s not stored", plural(kinds[k], k, k+"s"))
	}
	return b.String()
}

// plural is "1 file", "2 files": every count in veil's user-facing lines goes through it.
var plural = words.Count

// with runs fn with an unlocked, connected client and releases it afterwards.
func (o *clientFlags) with(cmd *cobra.Command, fn func(*dupless.Client) error) error {
	cl, done, _, err := o.open(cmd, "")
	if err != nil {
		return err
	}
	defer done()
	return fn(cl)
}

// humanBytes formats a byte count in binary units (go-humanize: "1.2 MiB", "82 MiB").
func humanBytes(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

// passphrase reads the passphrase from a file (flag, then $VEIL_PASSWORD_FILE) or, on a
// terminal, a prompt (twice when confirm is set).
func passphrase(file string, confirm bool) ([]byte, error) {
	return readPassphrase(file, "--password-file", profile.EnvPassword, "passphrase", confirm)
}

// readPassphrase reads a passphrase (what) from file (given by flag), else from the file
// named by $env, else from the terminal (typed twice with confirm).
func readPassphrase(file, flag, env, what string, confirm bool) ([]byte, error) {
	if file == "" {
		file = os.Getenv(env)
	}
	if file != "" {
		return passphraseFile(file, what)
	}
	return promptPassphrase(what, fmt.Sprintf("use %s or set %s", flag, env), confirm)
}

// passphraseFile reads a passphrase (what) from a file, without its line ending.
func passphraseFile(file, what string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s file: %w", what, err)
	}
	p := strings.TrimRight(string(b), "\r\n")
	if p == "" {
		return nil, fmt.Errorf("%s file is empty", what)
	}
	return []byte(p), nil
}

// promptPassphrase asks the terminal for a passphrase (what), twice with confirm; hint
// says how to give it when stdin is not a terminal.
func promptPassphrase(what, hint string, confirm bool) ([]byte, error) {
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return nil, fmt.Errorf("no %s: %s (stdin is not a terminal)", what, hint)
	}
	read := func(prompt string) ([]byte, error) {
		fmt.Fprint(os.Stderr, prompt)
		p, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		return p, err
	}
	p, err := read(what + ": ")
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("empty %s", what)
	}
	if confirm {
		q, err := read("again: ")
		if err != nil {
			return nil, err
		}
		if string(p) != string(q) {
			// Before anything was written: the same command again asks afresh.
			return nil, fmt.Errorf("the two %ss you typed differ; nothing was changed: run the same command again", what)
		}
	}
	return p, nil
}
