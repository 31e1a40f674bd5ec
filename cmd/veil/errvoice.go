package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/veil-project/veil/internal/verr"
	"github.com/veil-project/veil/internal/words"
)

// The error voice: every error is one line "veil: ...", without Go's raw transport
// wording (`Get "https://host/v1/...": dial tcp ...`), and usage mistakes exit 2 with the
// command's usage line, as Unix tools do.

// exitUsage is the exit status of a command line veil cannot run (wrong arguments or flags).
const exitUsage = 2

// argError is a command line mistake; it carries the command's usage line.
type argError struct {
	err error
	cmd *cobra.Command
}

func (e argError) Error() string { return e.err.Error() }
func (e argError) Unwrap() error { return e.err }
func (e argError) ExitCode() int { return exitUsage }

// markUsageErrors makes every command's argument and flag errors usage errors.
func markUsageErrors(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return argError{err, cmd}
				}
				return nil
			}
		}
		c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return argError{flagValueError(err), cmd} })
		if !c.Runnable() && c.HasSubCommands() {
			// cobra shows a group's help and exits 0 for any argument: 'veil store gcc'
			// in a script would succeed having done nothing.
			c.RunE = func(cmd *cobra.Command, a []string) error {
				if len(a) > 0 {
					return fmt.Errorf("unknown command %q for %q", a[0], cmd.CommandPath())
				}
				return cmd.Help()
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usageError is a usage mistake a command finds itself (a flag's value, flags that do
// not go together): exit status 2 and, as every other, the usage line of the command
// (usageOf, in main, names it).
func usageError(msg string) error { return argError{errors.New(msg), nil} }

// usageOf makes err a usage error of cmd, the command that ran: one of usageError's, and
// cobra's error for a required flag left out (found before cmd runs, past
// markUsageErrors' hooks).
func usageOf(cmd *cobra.Command, err error) error {
	var ue argError
	switch {
	case cmd == nil:
	case errors.As(err, &ue) && ue.cmd == nil, strings.HasPrefix(err.Error(), "required flag(s) "):
		return argError{err, cmd}
	}
	return err
}

// errorLines is what main prints for err on stderr: one line, and for a usage error the
// usage line.
func errorLines(err error) string {
	msg := textMessage(err)
	var ue argError
	if errors.As(err, &ue) && ue.cmd != nil {
		return fmt.Sprintf("veil: %s\nusage: %s (see 'veil %s --help')\n", msg, ue.cmd.UseLine(), strings.TrimPrefix(ue.cmd.CommandPath(), "veil "))
	}
	return fmt.Sprintf("veil: %s\n", msg)
}

// errorMessage is err as its stderr line says it, without "veil: ", but with names as
// they are: the text of --json's error object (JSON escapes what a terminal must not see).
func errorMessage(err error) string { return voice(err, oneLine(plainNetErrors(err))) }

// textMessage is err as its stderr line says it, without "veil: ": errorMessage's text
// with every control character and byte that is not UTF-8 escaped in place
// (words.Escape), so that a name in it cannot forge a line or reach the terminal as an
// escape sequence; the line breaks errors.Join puts between errors still read "; ".
func textMessage(err error) string { return voice(err, oneLine(escapedText(err))) }

// escapedText is err's text escaped (words.Escape) but for the line breaks errors.Join
// put between errors, found by walking err's chain: each wrapper whose text ends with the
// wrapped error's adds its own prefix, escaped.
func escapedText(err error) string {
	if _, ok := err.(*url.Error); ok {
		return words.Escape(plainNetErrors(err))
	}
	msg := err.Error()
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var texts, parts []string
		for _, e := range j.Unwrap() {
			texts = append(texts, e.Error())
			parts = append(parts, escapedText(e))
		}
		if strings.Join(texts, "\n") == msg {
			return strings.Join(parts, "\n")
		}
	}
	if in := errors.Unwrap(err); in != nil && strings.HasSuffix(msg, in.Error()) {
		return words.Escape(strings.TrimSuffix(msg, in.Error())) + escapedText(in)
	}
	return words.Escape(plainNetErrors(err))
}

// voice adds to msg, the text of err, what the error voice says beside it.
func voice(err error, msg string) string {
	var ue argError
	switch {
	case errors.As(err, &ue):
	case strings.HasPrefix(msg, "unknown command"):
		msg += " (see 'veil --help')"
	case strings.HasSuffix(msg, ": connection refused"):
		msg += " (nothing listens there: is the server running?)"
	}
	return msg
}

// exitCode is the exit status of a command that failed with err: the one err carries
// (exitError, withExit), 2 for a usage mistake, 3 for damage (below), else 1.
func exitCode(err error) int {
	var ec interface{ ExitCode() int }
	switch {
	case errors.As(err, &ec):
		return ec.ExitCode()
	case isUsage(err):
		return exitUsage
	case errors.Is(err, verr.ErrIntegrity):
		return exitDamage
	}
	return 1
}

// exitDamage is the exit status of a command that met stored or served data failing
// verification (errors.Is(err, verr.ErrIntegrity): a tampered or corrupt key record, tree
// root, tree base, kept version or chunk), whichever command met it and whether it stopped
// there or went on: the status check gives the damage it finds. Decided here, once, so no
// command can answer it with 1 (forget, prune and log did).
const exitDamage = 3

// withExit gives err the exit status code, keeping its chain (plainNetErrors reads it).
func withExit(err error, code int) error { return exitWrap{err, code} }

type exitWrap struct {
	err  error
	code int
}

func (e exitWrap) Error() string { return e.err.Error() }
func (e exitWrap) Unwrap() error { return e.err }
func (e exitWrap) ExitCode() int { return e.code }

// isUsage reports whether err is a command line mistake, including those cobra finds
// before a command runs (an unknown command).
func isUsage(err error) bool {
	var ue argError
	return errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") ||
		strings.HasPrefix(err.Error(), "unknown flag") || strings.HasPrefix(err.Error(), "unknown shorthand flag")
}

// plainNetErrors rewrites each HTTP client error inside err's text (`Get "URL": cause`) as
// "HOST: cause", the cause without Go's dial wording: "127.0.0.1:7480: connection refused".
func plainNetErrors(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		var ue *url.Error
		if !errors.As(e, &ue) {
			break
		}
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
		cause := ue.Err
		var oe *net.OpError
		if errors.As(cause, &oe) && oe.Err != nil {
			cause = oe.Err
			if se := errors.Unwrap(oe.Err); se != nil && !strings.Contains(oe.Err.Error(), "tls") {
				cause = se // "connect: connection refused" -> "connection refused"
			}
		}
		msg = strings.Replace(msg, ue.Error(), host+": "+cause.Error(), 1)
		e = ue.Err
	}
	return msg
}

// oneLine joins a multi-line message (errors.Join, server bodies) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// pathErr prefixes err with the path it is about, unless its message names it already
// ("x: x: not found" says the path twice), or the path is empty ('veil rm ""' said
// "veil: : refusing to remove the root").
func pathErr(p string, err error) error {
	if name := strings.Trim(p, "/"); p == "" || name != "" && strings.Contains(err.Error(), name) {
		return err
	}
	return fmt.Errorf("%s: %w", p, err)
}

// flagValueError says what a number or switch flag wants, in place of strconv's words
// (found by a user walkthrough: '--version abc' was `invalid argument "abc" for
// "--version" flag: strconv.ParseInt: parsing "abc": invalid syntax`); other errors
// are as they are.
func flagValueError(err error) error {
	var ive *pflag.InvalidValueError
	var ne *strconv.NumError
	if !errors.As(err, &ive) || !errors.As(err, &ne) || ive.GetFlag() == nil {
		return err
	}
	want := map[string]string{"int": "a whole number", "int64": "a whole number", "int32": "a whole number",
		"uint": "a whole number, not negative", "uint64": "a whole number, not negative", "uint32": "a whole number, not negative",
		"float64": "a number", "bool": "true or false"}[ive.GetFlag().Value.Type()]
	switch {
	case want == "":
		return err
	case errors.Is(ne.Err, strconv.ErrRange):
		return fmt.Errorf("--%s %s: out of range", ive.GetFlag().Name, ive.GetValue())
	}
	return fmt.Errorf("--%s %s: want %s", ive.GetFlag().Name, ive.GetValue(), want)
}
