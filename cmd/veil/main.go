// Command veil is privacy-preserving storage for untrusted clouds.
//
// main.go holds only the root command and the error voice; each command group lives in a
// file of its own (keyserver.go, store.go, bench.go, ...) and registers itself with
// register() from an init function, so groups never edit each other's files. Commands
// parse flags and call one package function; the logic lives under internal/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

var groups []func() *cobra.Command

// register adds a top-level command group to veil; call it from an init function.
func register(f func() *cobra.Command) { groups = append(groups, f) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "veil",
		Short: "Encrypted, deduplicating, metadata-hiding storage for untrusted clouds",
		Long: `veil stores files on clouds you do not trust. Files leave this machine encrypted,
yet identical content from different users is still stored once (DupLESS), and the
servers involved learn as little metadata as the chosen mode allows.

Start with 'veil serve' for an all-in-one local deployment, or see README.md.

Scripts (docs/scripting.md): results go to stdout, errors to stderr as one line
"veil: ...". Exit status 0 is success, 1 failure, 2 a usage mistake, 3 damage (stored data
that failed verification, whichever command met it) or some items failed (the rest went
through), 4 put stored some files without deduplication, 130 and 143 stopped short by
Ctrl-C or SIGTERM (servers and mounts stop on them and exit 0); find exits 0 found, 1
nothing found, 2 could not search. With --json every result is JSON, and a
command that fails ends stdout with {"error": "...", "exit_code": N}; a name that is not
valid UTF-8 gets its exact bytes beside it in base64 ("path_bytes" next to "path"). Text
output quotes a name holding control characters as shells do ($'evil\nname').`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, f := range groups {
		root.AddCommand(f())
	}
	var cpuProfile, traceFile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for developers)")
	root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().StringVar(&traceFile, "trace", "", "write a runtime execution trace to this file (for developers)")
	root.PersistentFlags().MarkHidden("trace")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if traceFile != "" {
			f, err := os.Create(traceFile)
			if err != nil {
				return err
			}
			if err := trace.Start(f); err != nil {
				return err
			}
		}
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		return pprof.StartCPUProfile(f)
	}
	return root
}

// exitError carries an exit status other than 1; veil uses 3 for "some items failed,
// the rest went through" (per-file errors, fsck problems).
type exitError struct {
	msg  string
	code int
}

func (e exitError) Error() string { return e.msg }
func (e exitError) ExitCode() int { return e.code }

func main() {
	ctx, stop := interruptible()
	root := newRootCommand()
	markUsageErrors(root)
	cmd, err := root.ExecuteContextC(ctx)
	sig := interruptedBy(ctx) // before stop(), which cancels ctx too
	stop()
	// Stopped here, not in a PostRun: cobra skips that when a command fails (an
	// interrupted put), and its profile would stay empty.
	pprof.StopCPUProfile()
	trace.Stop()
	if err != nil {
		err = usageOf(cmd, err)
		code := exitCode(err)
		if sig != 0 && !isUsage(err) {
			// Ctrl-C or SIGTERM stopped the command short: say so, not "context canceled"
			// or a transport error about it (put, get: run the same command again to
			// finish), and exit as shells and scripts expect of a command a signal ended,
			// 128 + the signal's number (130, 143), find included.
			err = errors.New("interrupted")
			code = exitSignal + int(sig)
		}
		fmt.Fprint(os.Stderr, errorLines(err))
		if wantsJSONError(cmd) {
			os.Stdout.Write(errorJSON(errorMessage(err), code))
		}
		os.Exit(code)
	}
	// A command that finished its work although a signal came (a server's clean shutdown
	// is the usual case: veil serve, store serve, mount) exits 0.
}

// exitSignal + the signal's number is the exit status of a command a signal stopped short,
// as a shell reports a process the signal killed: 130 for SIGINT, 143 for SIGTERM.
const exitSignal = 128

// sameInterruption is how soon after the first a signal is the same interruption: 'timeout
// -s INT' and a kill of the process group deliver one signal twice, microseconds apart.
const sameInterruption = 500 * time.Millisecond

// interrupted is the cause of a command's context that a signal cancelled.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// interruptedBy returns the signal that cancelled ctx, or 0.
func interruptedBy(ctx context.Context) syscall.Signal {
	var i interrupted
	if errors.As(context.Cause(ctx), &i) {
		return i.sig
	}
	return 0
}

// interruptible returns the context of a command: the first Ctrl-C or SIGTERM cancels it
// (its cause names the signal: interruptedBy), and the command finishes what it must (the
// writes in flight, the tree root of what it stored); a second one ends the process at
// once, as the signal does by default, unless it follows the first within
// sameInterruption (found by a user walkthrough: 'timeout -s INT' killed a put still
// unlocking its key, or mid-write, leaving its lock behind).
func interruptible() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		first := (<-sigs).(syscall.Signal)
		start := time.Now()
		cancel(interrupted{first})
		for sig := range sigs {
			if time.Since(start) >= sameInterruption {
				signal.Reset(sig)
				if s, ok := sig.(syscall.Signal); ok {
					syscall.Kill(os.Getpid(), s)
				}
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}
