// Package fielderr is the one error type that Validate methods return
// (election, kube, proxy). They return one per wrong field, joined with
// errors.Join. Each names the wrong struct field. internal/config filled
// that field from a configuration key, so it can name the key instead.
package fielderr

import "fmt"

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
