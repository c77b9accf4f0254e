package config

import (
	"fmt"
	"strings"
)

// KeyError is a configuration error: Key names the key (or "config" for the
// file, or a flag), Err what is wrong. Its message is one line; it never
// quotes a secret.
type KeyError struct {
	Key string
	Err error
}

// Error is one line: runs of white space, newlines included (a YAML
// parser's message may span lines), become one space.
func (e *KeyError) Error() string {
	return strings.Join(strings.Fields(e.Key+": "+e.Err.Error()), " ")
}
func (e *KeyError) Unwrap() error { return e.Err }

func errorf(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Errorf returns a *KeyError for key.
func Errorf(key, format string, args ...any) error { return errorf(key, format, args...) }
