package main

import (
	"bytes"
	"strings"
	"testing"
)

// main's run dispatches to the commands, and still runs the daemon's flags.
func TestRunDispatchesCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if status := run([]string{"status", "-h"}, nil, &stdout, &stderr); status != 0 || !strings.HasPrefix(stdout.String(), "Usage: electd status") {
		t.Errorf("run status -h: %d %q", status, stdout.String())
	}
	stdout.Reset()
	if status := run([]string{"release", "--help"}, nil, &stdout, &stderr); status != 0 || !strings.HasPrefix(stdout.String(), "Usage: electd release") {
		t.Errorf("run release --help: %d %q", status, stdout.String())
	}
	stdout.Reset()
	if status := run([]string{"--help"}, nil, &stdout, &stderr); status != 0 || !strings.HasPrefix(stdout.String(), "Usage: electd [--config FILE]") {
		t.Errorf("run --help: %d %q", status, stdout.String())
	}
}
