package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/words"
)

// A command's warnings (a put cache not saved, a foreign entry skipped, --no-root-check
// findings) reach the user as veil's other warnings do, one plain line each:
//
//	warning: put cache not saved (the next put reads records): write ...: no space left on device (file /home/a/.config/veil/cache/1f.put)
//
// not as a log record ("time=2026-11-29T21:03:30.672Z level=WARN msg=..."), which is
// how they came out before (found by a user walkthrough). -v keeps the log records, with
// their times and levels, as it shows everything else that happens.

// commandLog is the logger of a client command: log records with -v, else warnings only,
// as plain lines.
func commandLog(w io.Writer, verbose bool) *slog.Logger {
	if verbose {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(&warnHandler{w: w, mu: &sync.Mutex{}})
}

// warnHandler writes records at Warn and above as "warning: MSG: ERR (key value, ...)".
type warnHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	attrs []slog.Attr
}

func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &warnHandler{w: h.w, mu: h.mu, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], as...)}
}

// WithGroup is not used by veil's warnings: a group's attributes are shown as any other.
func (h *warnHandler) WithGroup(string) slog.Handler { return h }

func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	var errs, rest []string
	add := func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			errs = append(errs, textMessage(err))
		} else if a.Key != "" {
			rest = append(rest, a.Key+" "+words.Escape(a.Value.String()))
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	line := "warning: " + words.Escape(r.Message)
	if len(errs) > 0 {
		line += ": " + strings.Join(errs, "; ")
	}
	if len(rest) > 0 {
		line += " (" + strings.Join(rest, ", ") + ")"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, line+"\n")
	return err
}
