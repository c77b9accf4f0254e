package cli

import (
	"strings"
	"testing"

	"github.com/electd/electd/tests/harness/electdtest"
)

// TestE2EUsage runs the real binary's command line as a user types it
// (issue 40): commands and flags as Go tools take them, and messages that
// say what to type. Nothing connects, so no ZooKeeper.
func TestE2EUsage(t *testing.T) {
	minimal := []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/e2e/usage"}
	_, help, _ := electdtest.Run(t, nil, "--help").Outcome()
	_, version, _ := electdtest.Run(t, nil, "--version").Outcome()
	if !strings.HasPrefix(help, "Usage: electd [") || !strings.HasPrefix(version, "electd ") {
		t.Fatalf("--help or --version printed nothing like them:\n%s%s", help, version)
	}
	for _, tc := range []struct {
		args   []string
		status int
		stdout string // a prefix
		stderr string // the whole
	}{
		{[]string{"help"}, exitOK, help, ""},
		{[]string{"version"}, exitOK, version, ""},
		{[]string{"-version"}, exitOK, version, ""},
		{[]string{"help", "release"}, exitOK, "Usage: electd release", ""},
		// A boolean alone is true, before another flag or last.
		{append([]string{"--zookeeper.tls", "--validate"}, minimal...), exitOK, "# electd effective configuration", ""},
		{append(minimal, "--validate", "--zookeeper.tls"), exitOK, "# electd effective configuration", ""},
		{append(minimal, "--validate", "--zookeeper.tls", "yes"), exitUsage, "", "electd: zookeeper.tls: \"yes\" is not true or false\n"},
		{[]string{"stauts"}, exitUsage, "", "electd: stauts: unknown command; did you mean status? (see --help)\n"},
		{append([]string{"run"}, append(minimal, "sleep", "10")...), exitUsage, "",
			"electd: run: \"sleep\" is not a flag of electd's; put the command after --: electd run [--KEY VALUE ...] -- sleep 10\n"},
		{[]string{"--validate"}, exitUsage, "",
			"electd: zookeeper.servers: required; set --zookeeper.servers or ELECTD_ZOOKEEPER_SERVERS, e.g. 127.0.0.1:2181\n" +
				"electd: election.path: required; set --election.path or ELECTD_ELECTION_PATH, e.g. /services/example\n"},
	} {
		status, stdout, stderr := electdtest.Run(t, nil, tc.args...).Outcome()
		if status != tc.status || !strings.HasPrefix(stdout, tc.stdout) || stderr != tc.stderr {
			t.Errorf("electd %s: status %d, stdout %.80q, stderr %q; want %d, %.80q, %q",
				strings.Join(tc.args, " "), status, stdout, stderr, tc.status, tc.stdout, tc.stderr)
		}
	}
	if _, stdout, _ := electdtest.Run(t, nil, append(minimal, "--validate", "--zookeeper.tls")...).Outcome(); !strings.Contains(stdout, "\n  tls: true\n") {
		t.Errorf("--zookeeper.tls alone is not true:\n%s", stdout)
	}
}
