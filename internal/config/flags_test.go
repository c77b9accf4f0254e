package config

import (
	"slices"
	"strings"
	"testing"
)

// A boolean key alone is true, as pflag's and kubectl's booleans are:
// followed by another flag, by electd run's "--", or last. Followed by
// anything else it takes that as its value, as before (issue 40).
func TestBareBooleanFlags(t *testing.T) {
	cleanEnv(t)
	auth := append([]string{"--zookeeper.auth", "u:p"}, minimal...)
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{"alone, last", append(slices.Clone(auth), "--zookeeper.fix_acl"), true},
		{"alone, before a flag", append([]string{"--zookeeper.fix_acl", "--validate"}, auth...), true},
		{"alone, one dash", append([]string{"-zookeeper.fix_acl"}, auth...), true},
		{"=false", append([]string{"--zookeeper.fix_acl=false"}, auth...), false},
		{"=true", append([]string{"--zookeeper.fix_acl=true"}, auth...), true},
		{"then false", append([]string{"--zookeeper.fix_acl", "false"}, auth...), false},
		{"then TRUE", append([]string{"--zookeeper.fix_acl", "TRUE"}, auth...), true},
		{"unset", auth, false},
		{"electd run, before --", append(append([]string{"run"}, auth...), "--zookeeper.fix_acl", "--", "true"), true},
		{"electd run, then false", append(append([]string{"run"}, auth...), "--zookeeper.fix_acl", "false", "--", "true"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadArgs(t, tc.args...)
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if c.ZooKeeper.FixACL != tc.want {
				t.Errorf("%q: fix_acl = %v, want %v", tc.args, c.ZooKeeper.FixACL, tc.want)
			}
		})
	}
	// A value that is no boolean is still an error naming the key, and a
	// key that is no boolean still needs its value.
	for _, c := range []badCase{
		{args: with("--zookeeper.tls", "yes"), key: "zookeeper.tls"},
		{args: with("--http.addr"), key: "--http.addr"},
	} {
		checkBad(t, c)
	}
}

// Every flag may have one dash, as Go's flag package takes it; a slip is
// named with the flag it likely meant, whichever the dashes.
func TestOneDashFlags(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{{"-version"}, {"-version=true"}, {"--version"}} {
		if c, err := loadArgs(t, args...); err != nil || !c.Version {
			t.Errorf("%q: %v, want --version", args, err)
		}
	}
	c, err := loadArgs(t, "-validate", "-zookeeper.servers", "a:1", "-election.path=/x")
	if err != nil || !c.Validate || c.Election.Path != "/x" || c.ZooKeeper.Servers[0] != "a:1" {
		t.Fatalf("one-dash flags: %v %v", c, err)
	}
	// A flag's value that starts with a dash stays a value.
	if c, err := loadArgs(t, with("--id", "-version")...); err != nil || c.Version || c.ID != "-version" {
		t.Errorf("--id -version: %v, version %v, id %q", err, c != nil && c.Version, c.ID)
	}
	for _, tc := range []struct{ arg, want string }{
		{"-verison", "-verison: unknown flag; did you mean --version? (see --help)"},
		{"--verison", "--verison: unknown flag; did you mean --version? (see --help)"},
		{"-x", "-x: unknown flag (see --help)"},
	} {
		if _, err := loadArgs(t, tc.arg); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.arg, err, tc.want)
		}
	}
}

// electd run without "--" says where the command goes, and shows it
// there; electd's own flags before it are still checked first.
func TestRunWithoutDoubleDash(t *testing.T) {
	cleanEnv(t)
	const hint = `run: "sleep" is not a flag of electd's; put the command after --: electd run [--KEY VALUE ...] -- `
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "sleep", "10"}, hint + "sleep 10"},
		{append(append([]string{"run"}, minimal...), "sleep", "-v", "--daily"), hint + "sleep -v --daily"},
		{append([]string{"run", "--zookeeper.tls"}, "sleep", "10"), hint + "sleep 10"},
		{[]string{"run", "--election.paht", "/x", "sleep"}, "--election.paht: unknown flag; did you mean --election.path? (see --help)"},
		{[]string{"run", "sleep", strings.Repeat("x", 100)}, hint + "sleep " + strings.Repeat("x", 58) + "..."},
		// With "--", an argument before it is only unexpected.
		{append(append([]string{"run"}, minimal...), "stray", "--", "sleep"), "stray: unexpected argument; electd takes flags only (see --help)"},
	} {
		if _, err := loadArgs(t, tc.args...); err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.args, err, tc.want)
		}
	}
}

// A required key that is missing names the flag and the variable that set
// it (issue 40: it named only the key, which the file spells).
func TestRequiredNamesFlagAndVariable(t *testing.T) {
	cleanEnv(t)
	_, err := loadArgs(t)
	want := "zookeeper.servers: required; set --zookeeper.servers or ELECTD_ZOOKEEPER_SERVERS, e.g. 127.0.0.1:2181\n" +
		"election.path: required; set --election.path or ELECTD_ELECTION_PATH, e.g. /services/example"
	if err == nil || err.Error() != want {
		t.Errorf("no keys:\n%v\nwant\n%s", err, want)
	}
}

// Closest suggests a name from any list, by the rule that suggests keys.
func TestClosest(t *testing.T) {
	commands := []string{"status", "release", "run", "help", "version"}
	for name, want := range map[string]string{"stauts": "status", "relase": "release", "verison": "version", "hlep": "help", "serve": "", "/etc/electd.yaml": ""} {
		if got := Closest(name, commands...); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
}
