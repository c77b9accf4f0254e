package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// KeyError is a configuration error: Key names the key (or "config" for the
// file, "run" for electd run's command, or a flag), Err what is wrong. Its
// message is one line; it never quotes a secret.
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

// Errors is every error of one configuration, at most one per key, so that
// one round of fixes is enough: Load returns it when there is more than one
// error (a lone error is its *KeyError). Its message is one line per error.
type Errors []*KeyError

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, ke := range e {
		lines[i] = ke.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the first *KeyError.
func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, ke := range e {
		out[i] = ke
	}
	return out
}

// maxErrors bounds how many errors Load reports: a file of a thousand
// unknown keys is one mistake, not a thousand lines.
const maxErrors = 20

// errorList collects a configuration's errors, the first per key.
type errorList struct {
	errs []*KeyError
	seen map[string]bool
}

// add adds each error that is not nil and names a key with no error yet,
// nor a section with one (a section that is not a mapping hides its keys).
// An error that is no *KeyError is a bug here; it is kept under "config".
func (l *errorList) add(errs ...error) {
	for _, err := range errs {
		if err == nil {
			continue
		}
		var ke *KeyError
		if !errors.As(err, &ke) {
			ke = &KeyError{Key: "config", Err: err}
		}
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		if l.covered(ke.Key) {
			continue
		}
		l.seen[ke.Key] = true
		l.errs = append(l.errs, ke)
	}
}

// has reports whether key has an error.
func (l *errorList) has(key string) bool { return l.seen[key] }

// covered reports whether key or a section above it has an error.
func (l *errorList) covered(key string) bool {
	for {
		if l.seen[key] {
			return true
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			return false
		}
		key = key[:i]
	}
}

// err returns nil, the one *KeyError, or Errors in the table's order (what
// names no key first), cut at maxErrors.
func (l *errorList) err() error {
	switch len(l.errs) {
	case 0:
		return nil
	case 1:
		return l.errs[0]
	}
	errs := slices.Clone(l.errs)
	slices.SortStableFunc(errs, func(a, b *KeyError) int { return keyIndex(a.Key) - keyIndex(b.Key) })
	if len(errs) > maxErrors {
		more := len(errs) - maxErrors + 1
		errs = append(errs[:maxErrors-1], &KeyError{Key: "config", Err: fmt.Errorf("%d more errors not shown", more)})
	}
	return Errors(errs)
}

// keyIndex is key's position in the table, -1 for a name that is no key.
func keyIndex(key string) int {
	return slices.IndexFunc(table, func(k Key) bool { return k.Name == key })
}
