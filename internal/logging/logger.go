// Package logging is how electd logs (docs/design/session-and-faults.md, "Process"): one
// *slog.Logger built by New, written through an AsyncWriter so that neither
// the election nor the shutdown ever waits on a log write, and Throttle for
// the lines whoever reaches the HTTP port could make electd write at will.
package logging

import (
	"bytes"
	"io"
	"log/slog"
)

// New returns a logger writing to w in format ("json" or "text") from
// level ("debug", "info", "warn" or "error"; internal/config validates
// both). Durations are written as the configuration writes them ("10s").
func New(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level)) // validated already
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationsAsText}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationsAsText prints durations as the text format and the
// configuration do ("10s"): slog's JSON handler would print nanoseconds.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// DroppedNotice renders the line that stands for lost log lines, in the
// logger's format: the notice an AsyncWriter writes in their place.
func DroppedNotice(level, format string) func(uint64) []byte {
	return func(n uint64) []byte {
		var b bytes.Buffer
		New(&b, level, format).Warn("log lines dropped: stderr was not read fast enough", "dropped", n)
		return b.Bytes()
	}
}
