// Package fielderr is the one error type that Validate methods return
// (election, kube, proxy). They return one per wrong field, joined with
// errors.Join. Each names the wrong struct field. internal/config filled
// that field from a configuration key, so it can name the key instead.
// InRange, Printable and Quote are the checks and the quoting those
// Validate methods share.
package fielderr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Error says that Field of Pkg's configuration is wrong, and how (Err).
// Test for it with errors.As.
type Error struct {
	Pkg   string // the package whose Config holds the field: "election", "kube", "proxy"
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Pkg + ": " + e.Field + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for Pkg's Field, its cause formatted as by
// fmt.Errorf.
func Errorf(pkg, field, format string, args ...any) error {
	return &Error{Pkg: pkg, Field: field, Err: fmt.Errorf(format, args...)}
}

// InRange says why d is outside lo to hi, or nil.
func InRange(d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%v is outside %v to %v", d, lo, hi)
	}
	return nil
}

// Printable reports valid UTF-8 without control characters (Unicode Cc:
// NUL, \n, ESC, DEL, C1).
func Printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// Quote shows a value in an error: quoted (control characters escaped) and
// cut at 64 bytes, so that a message stays one short line.
func Quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "..."
	}
	return strconv.Quote(s)
}
