package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// logLevelFlag adds a server command's --log-level.
func logLevelFlag(f *pflag.FlagSet, level *string) {
	f.StringVar(level, "log-level", "info", "debug, info, warn or error (JSON logs on stderr)")
}

// serverLogger is a server's logger: JSON lines on the command's stderr at --log-level.
func serverLogger(cmd *cobra.Command, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lv})), nil
}
