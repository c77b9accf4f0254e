package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad flags exit 2 with one line that says what is wrong, before anything
// is started.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-only", "handof"}, `unknown section "handof"`},
		{[]string{"-scale", "1000,lots"}, `-scale: "lots" is not a number`},
		{[]string{"-scale", "2"}, "scale size 2: at least 3"},
		{[]string{"-rounds", "0"}, "rounds must be at least 1"},
		{[]string{"-idle", "2"}, "idle participants: at least 3"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"-faults", "stall,flood"}, `unknown fault "flood"`},
		{[]string{"-fault-window", "10ms"}, "a window of at least 1s"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q, want it to say %q", tc.args, stderr.String(), tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: printed a report: %q", tc.args, stdout.String())
		}
	}
}
