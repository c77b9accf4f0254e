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

// electd has commands as Go tools do (issue 40): `electd help` is --help,
// `electd help status` is `electd status --help`, `electd version` (and
// -version) is --version, and a command electd lacks is named with the
// one it likely meant; bad usage exits 2.
func TestRunHelpVersionAndUnknownCommands(t *testing.T) {
	output := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(args, nil, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	_, help, _ := output("--help")
	_, version, _ := output("--version")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help"}, help},
		{[]string{"help", "run"}, help},
		{[]string{"help", "version"}, help},
		{[]string{"version"}, version},
		{[]string{"-version"}, version},
		{[]string{"-help"}, help},
	} {
		if code, stdout, stderr := output(tc.args...); code != 0 || stdout != tc.want || stderr != "" {
			t.Errorf("electd %s: %d, stderr %q, stdout differs: %v", strings.Join(tc.args, " "), code, stderr, stdout != tc.want)
		}
	}
	if code, stdout, _ := output("help", "status"); code != 0 || !strings.HasPrefix(stdout, "Usage: electd status") {
		t.Errorf("electd help status: %d %q", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, "electd: stauts: unknown command; did you mean status? (see --help)\n"},
		{[]string{"relase", "--to", "x"}, "electd: relase: unknown command; did you mean release? (see --help)\n"},
		{[]string{"verison"}, "electd: verison: unknown command; did you mean version? (see --help)\n"},
		{[]string{"help", "stat"}, "electd: stat: unknown command; did you mean status? (see --help)\n"},
		{[]string{"serve"}, "electd: serve: unknown command; electd's commands are status, release, wait-ready, run, hold-listener, help and version, and the daemon takes flags only (see --help)\n"},
		{[]string{"version", "--short"}, "electd: version: --short: unexpected argument; electd version takes none\n"},
		{[]string{"help", "status", "release"}, "electd: help: release: unexpected argument; electd help takes one command at most\n"},
	} {
		if code, stdout, stderr := output(tc.args...); code != 2 || stdout != "" || stderr != tc.want {
			t.Errorf("electd %s: %d, stdout %q, stderr\n%q, want 2 and\n%q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}
