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
"veil: ...". Exit status 0 is success, 1 failure, 2 a usage mistake, 3 some items failed
(the rest went through), 4 put stored some files without deduplication; find exits 0
found, 1 nothing found, 2 could not search. With --json every result is JSON, and a
command that fails ends stdout with {"error": "...", "exit_code": N}; a name that is not
valid UTF-8 gets its exact bytes beside it in base64 ("path_bytes" next to "path").`,
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
	interrupted := ctx.Err() != nil // before stop(), which cancels ctx too
	stop()
	// Stopped here, not in a PostRun: cobra skips that when a command fails, and `veil
	// serve` ends with an error (interrupted) — its profile would stay empty.
	pprof.StopCPUProfile()
	trace.Stop()
	if err != nil {
		code := exitCode(err)
		if interrupted && !isUsage(err) {
			// Ctrl-C or SIGTERM: say so, not "context canceled" or a transport error
			// about it (put, get: run the same command again to finish). Exit 1, but
			// find keeps its 2: for it, 1 would read as "nothing found".
			err = errors.New("interrupted")
			if code != exitFindFailed {
				code = 1
			}
		}
		fmt.Fprint(os.Stderr, errorLines(err))
		if wantsJSONError(cmd) {
			os.Stdout.Write(errorJSON(errorMessage(err), code))
		}
		os.Exit(code)
	}
}

// sameInterruption is how soon after the first a signal is the same interruption: 'timeout
// -s INT' and a kill of the process group deliver one signal twice, microseconds apart.
const sameInterruption = 500 * time.Millisecond

// interruptible returns the context of a command: the first Ctrl-C or SIGTERM cancels it,
// and the command finishes what it must (the writes in flight, the tree root of what it
// stored); a second one ends the process at once, as the signal does by default, unless
// it follows the first within sameInterruption (found by a user walkthrough: 'timeout -s
// INT' killed a put still unlocking its key, or mid-write, leaving its lock behind).
func interruptible() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		first := time.Now()
		cancel()
		for sig := range sigs {
			if time.Since(first) >= sameInterruption {
				signal.Reset(sig)
				if s, ok := sig.(syscall.Signal); ok {
					syscall.Kill(os.Getpid(), s)
				}
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}
