package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 33: a zookeeper.servers host that cannot be a host is refused by
// --validate, from the file and from the environment, with one line that
// names the key and quotes the value with its escapes: no control
// character reaches the terminal.
func TestValidateRefusesServersThatCannotBeHosts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "electd.yaml"), []byte("zookeeper:\n  servers: ['a b:2181']\nelection:\n  path: /x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, script, want string }{
		{"white space, from the file", `"$ELECTD" --config "$D/electd.yaml" --validate`,
			`electd: zookeeper.servers: "a b:2181" has white space or a control character`},
		{"control characters, from the environment", `ELECTD_ZOOKEEPER_SERVERS=$'\x7f\x01:1' "$ELECTD" --election.path /x --validate`,
			`electd: zookeeper.servers: "\x7f\x01:1" has white space or a control character`},
		{"neither a name nor an address", `"$ELECTD" --zookeeper.servers 'zk!:2181' --election.path /x --validate`,
			`electd: zookeeper.servers: "zk!:2181": "zk!" is neither a DNS name nor an IP address`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, stdout, stderr := bash(t, dir, c.script)
			if status != 2 || stdout != "" || stderr != c.want+"\n" {
				t.Errorf("status %d, stdout %q, stderr %q; want 2 and %q", status, stdout, stderr, c.want)
			}
			if strings.ContainsFunc(stderr, func(r rune) bool { return r < ' ' && r != '\n' || r == 0x7f }) {
				t.Errorf("stderr %q holds a control character", stderr)
			}
		})
	}
	status, stdout, stderr := bash(t, dir, `"$ELECTD" --zookeeper.servers 'zk-0.zk-hs.apps.svc.cluster.local:2181,[::1]:2181' --election.path /x --validate`)
	if status != 0 || !strings.Contains(stdout, "zk-0.zk-hs.apps.svc.cluster.local:2181") {
		t.Errorf("hosts that are hosts: status %d, stderr %q", status, stderr)
	}
}
