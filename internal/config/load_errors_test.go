package config

import (
	"errors"
	"strings"
	"testing"
)

type badCase struct {
	name string
	args []string
	file string            // YAML; when set, --config points at it
	env  map[string]string // ELECTD_* variables
	key  string
}

// checkBad loads c and wants one error: one line naming c.key, which main
// prints after "electd: " before it exits with status 2.
func checkBad(t *testing.T, c badCase) {
	t.Helper()
	cleanEnv(t)
	for k, v := range c.env {
		t.Setenv(k, v)
	}
	args := c.args
	if c.file != "" {
		args = append([]string{"--config", writeFile(t, "electd.yaml", c.file)}, args...)
	}
	_, err := loadArgs(t, args...)
	if err == nil {
		t.Fatalf("%v: no error", args)
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != c.key {
		t.Errorf("error %q names %v, want %s", err, ke, c.key)
	}
	if got := "electd: " + err.Error() + "\n"; strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "electd: "+c.key+": ") || len(got) > 400 {
		t.Errorf("stderr %q is not one short line naming %s", got, c.key)
	}
}

func with(extra ...string) []string { return append(append([]string{}, minimal...), extra...) }

func TestBadConfigNamesTheKey(t *testing.T) {
	authFile := writeFile(t, "auth", "nocolon\n")
	for _, c := range []badCase{
		{name: "missing servers", args: []string{"--election.path", "/x"}, key: "zookeeper.servers"},
		{name: "empty servers", args: with("--zookeeper.servers", " , "), key: "zookeeper.servers"},
		{name: "server without port", args: with("--zookeeper.servers", "zk-0"), key: "zookeeper.servers"},
		{name: "server with bad port", args: with("--zookeeper.servers", "zk-0:21x1"), key: "zookeeper.servers"},
		{name: "server port out of range", args: with("--zookeeper.servers", "a:1,zk-0:99999"), key: "zookeeper.servers"},
		{name: "server port 0", args: with("--zookeeper.servers", "zk-0:0"), key: "zookeeper.servers"},
		{name: "server with chroot", args: with("--zookeeper.servers", "zk-0:2181/prod"), key: "zookeeper.servers"},
		{name: "missing path", args: []string{"--zookeeper.servers", "a:1"}, key: "election.path"},
		{name: "missing path with chroot", args: []string{"--zookeeper.servers", "a:1", "--zookeeper.chroot", "/prod"}, key: "election.path"},
		{name: "relative path", args: with("--election.path", "services/web"), key: "election.path"},
		{name: "path with empty segment", args: with("--election.path", "/services//web"), key: "election.path"},
		{name: "path with trailing slash", args: with("--election.path", "/services/"), key: "election.path"},
		{name: "root path", args: with("--election.path", "/"), key: "election.path"},
		{name: "relative chroot", args: with("--zookeeper.chroot", "prod"), key: "zookeeper.chroot"},
		{name: "path and chroot past 1 KiB", args: with("--zookeeper.chroot", "/"+strings.Repeat("c", 600), "--election.path", "/"+strings.Repeat("p", 600)), key: "election.path"},
		{name: "relative hold dir", args: with("--listen_hold_dir", "run/electd-listen"), key: "listen_hold_dir"},
		{name: "held http.addr port 0", args: with("--listen_hold_dir", "/run/electd-listen", "--http.addr", "127.0.0.1:0"), key: "http.addr"},
		{name: "unknown mode", args: with("--election.mode", "lottery"), key: "election.mode"},
		{name: "unknown on_suspend", args: with("--election.on_suspend", "panic"), key: "election.on_suspend"},
		{name: "unknown handoff", args: with("--election.handoff", "oldest"), key: "election.handoff"},
		{name: "unit-less duration", args: with("--zookeeper.session_timeout", "10"), key: "zookeeper.session_timeout"},
		{name: "unit-less fraction", args: with("--shutdown_timeout", "1.5"), key: "shutdown_timeout"},
		{name: "negative duration", args: with("--election.claim_delay", "-1s"), key: "election.claim_delay"},
		{name: "unparsable duration", args: with("--shutdown_grace", "soon"), key: "shutdown_grace"},
		{name: "session timeout below 1s", args: with("--zookeeper.session_timeout", "500ms"), key: "zookeeper.session_timeout"},
		{name: "session timeout 597h", args: with("--zookeeper.session_timeout", "597h"), key: "zookeeper.session_timeout"},
		{name: "session timeout past 10m", args: with("--zookeeper.session_timeout", "11m"), key: "zookeeper.session_timeout"},
		{name: "term outside selector", args: with("--election.term", "1m"), key: "election.term"},
		{name: "term in race mode", args: with("--election.mode", "race", "--election.term", "1m"), key: "election.term"},
		{name: "negative term", args: with("--election.mode", "selector", "--election.term", "-1m"), key: "election.term"},
		{name: "term 1ns", args: with("--election.mode", "selector", "--election.term", "1ns"), key: "election.term"},
		{name: "term past a week", args: with("--election.mode", "selector", "--election.term", "169h"), key: "election.term"},
		{name: "claim delay past 10m", args: with("--election.claim_delay", "11m"), key: "election.claim_delay"},
		{name: "addr without port", args: with("--http.addr", "localhost"), key: "http.addr"},
		{name: "addr port only", args: with("--http.addr", "4040"), key: "http.addr"},
		{name: "addr bad port", args: with("--http.addr", ":http"), key: "http.addr"},
		{name: "addr port out of range", args: with("--http.addr", ":70000"), key: "http.addr"},
		{name: "bad log level", args: with("--log.level", "verbose"), key: "log.level"},
		{name: "bad log format", args: with("--log.format", "xml"), key: "log.format"},
		{name: "auth without colon", args: with("--zookeeper.auth", "secret"), key: "zookeeper.auth"},
		{name: "auth without user", args: with("--zookeeper.auth", ":secret"), key: "zookeeper.auth"},
		{name: "unreadable auth_file", args: with("--zookeeper.auth_file", "/nonexistent/auth"), key: "zookeeper.auth_file"},
		{name: "auth_file not user:password", args: with("--zookeeper.auth_file", authFile), key: "zookeeper.auth_file"},
		{name: "auth and auth_file", args: with("--zookeeper.auth", "u:p", "--zookeeper.auth_file", authFile), key: "zookeeper.auth_file"},
		{name: "auth_previous without auth", args: with("--zookeeper.auth_previous", "u:old"), key: "zookeeper.auth_previous"},
		{name: "auth_previous without colon", args: with("--zookeeper.auth", "u:new", "--zookeeper.auth_previous", "old"), key: "zookeeper.auth_previous"},
		{name: "unreadable auth_previous_file", args: with("--zookeeper.auth", "u:new", "--zookeeper.auth_previous_file", "/nonexistent/auth"), key: "zookeeper.auth_previous_file"},
		{name: "auth_previous_file not user:password", args: with("--zookeeper.auth", "u:new", "--zookeeper.auth_previous_file", authFile), key: "zookeeper.auth_previous_file"},
		{name: "auth_previous and its file", args: with("--zookeeper.auth", "u:new", "--zookeeper.auth_previous", "u:old", "--zookeeper.auth_previous_file", authFile), key: "zookeeper.auth_previous_file"},
		{name: "token and token_file", args: with("--http.admin_token", "t", "--http.admin_token_file", authFile), key: "http.admin_token_file"},
		{name: "negative fencing_offset", args: with("--election.fencing_offset", "-1"), key: "election.fencing_offset"},
		{name: "fencing_offset not a number", args: with("--election.fencing_offset", "1e3"), key: "election.fencing_offset"},
		{name: "fencing_offset 2^63-1", args: with("--election.fencing_offset", "9223372036854775807"), key: "election.fencing_offset"},
		{name: "fencing_offset past int64", args: with("--election.fencing_offset", "9223372036854775808"), key: "election.fencing_offset"},
		{name: "grace equal to timeout", args: with("--shutdown_grace", "10s", "--shutdown_timeout", "10s"), key: "shutdown_grace"},
		{name: "grace longer than timeout", args: with("--shutdown_grace", "3s", "--shutdown_timeout", "2s"), key: "shutdown_grace"},
		{name: "zero shutdown_timeout", args: with("--shutdown_timeout", "0s"), key: "shutdown_timeout"},
		{name: "shutdown_timeout past 10m", args: with("--shutdown_timeout", "11m"), key: "shutdown_timeout"},
		{name: "bool yes", args: with("--zookeeper.tls", "yes"), key: "zookeeper.tls"},
		{name: "bool 1 in env", args: minimal, env: map[string]string{"ELECTD_ZOOKEEPER_TLS": "1"}, key: "zookeeper.tls"},
		{name: "bool 1 in YAML", args: minimal, file: "zookeeper:\n  tls: 1\n", key: "zookeeper.tls"},
		{name: "bool on in YAML", args: minimal, file: "zookeeper:\n  tls: on\n", key: "zookeeper.tls"},
		{name: "fix_acl without auth", args: with("--zookeeper.fix_acl", "true"), key: "zookeeper.fix_acl"},
		{name: "tls file without tls", args: with("--zookeeper.tls_ca_file", authFile), key: "zookeeper.tls_ca_file"},
		{name: "tls server name without tls", args: with("--zookeeper.tls_server_name", "zk"), key: "zookeeper.tls_server_name"},
		{name: "tls cert without key", args: with("--zookeeper.tls", "true", "--zookeeper.tls_cert_file", authFile), key: "zookeeper.tls_key_file"},
		{name: "tls key without cert", args: with("--zookeeper.tls", "true", "--zookeeper.tls_key_file", authFile), key: "zookeeper.tls_cert_file"},
		{name: "tls CA not PEM", args: with("--zookeeper.tls", "true", "--zookeeper.tls_ca_file", authFile), key: "zookeeper.tls_ca_file"},
		{name: "tls CA missing", args: with("--zookeeper.tls", "true", "--zookeeper.tls_ca_file", "/nonexistent/ca.pem"), key: "zookeeper.tls_ca_file"},
		{name: "tls cert not PEM", args: with("--zookeeper.tls", "true", "--zookeeper.tls_cert_file", authFile, "--zookeeper.tls_key_file", authFile), key: "zookeeper.tls_cert_file"},
		{name: "http cert without key", args: with("--http.tls_cert_file", authFile), key: "http.tls_key_file"},
		{name: "http key without cert", args: with("--http.tls_key_file", authFile), key: "http.tls_cert_file"},
		{name: "http cert missing", args: with("--http.tls_cert_file", "/nonexistent/c", "--http.tls_key_file", "/nonexistent/k"), key: "http.tls_cert_file"},
		{name: "max_connections 0", args: with("--http.max_connections", "0"), key: "http.max_connections"},
		{name: "max_connections huge", args: with("--http.max_connections", "1000000"), key: "http.max_connections"},
		{name: "no room for probes", args: with("--http.max_connections", "100", "--http.max_streams", "64", "--http.max_waiters", "64"), key: "http.max_connections"},
		{name: "max_streams negative", args: with("--http.max_streams", "-1"), key: "http.max_streams"},
		{name: "max_waiters past the maximum", args: with("--http.max_waiters", "4097"), key: "http.max_waiters"},
		{name: "max_waiters not a number", args: with("--http.max_waiters", "lots"), key: "http.max_waiters"},
		{name: "max_streams float in YAML", args: minimal, file: "http:\n  max_streams: 6.5\n", key: "http.max_streams"},
		{name: "unknown flag", args: with("--election.paht", "/x"), key: "--election.paht"},
		{name: "positional argument", args: with("serve"), key: "serve"},
		{name: "missing file", args: []string{"--config", "/nonexistent/electd.yaml"}, key: "config"},
		{name: "file does not parse", args: minimal, file: "election: [", key: "config"},
		{name: "file is a list", args: minimal, file: "- a\n- b\n", key: "config"},
		{name: "unknown top-level key", args: minimal, file: "electon:\n  path: /x\n", key: "electon"},
		{name: "unknown nested key", args: minimal, file: "zookeeper:\n  session_timout: 5s\n", key: "zookeeper.session_timout"},
		{name: "unknown key with a strange name", args: minimal, file: "\"a\\x1bb\": 1\n", key: `"a\x1bb"`},
		{name: "section is not a mapping", args: minimal, file: "zookeeper: zk-0:2181\n", key: "zookeeper"},
		{name: "section is a list", args: minimal, file: "http: [a, b]\n", key: "http"},
		{name: "YAML integer duration", args: minimal, file: "zookeeper:\n  session_timeout: 10\n", key: "zookeeper.session_timeout"},
		{name: "YAML float fencing_offset", args: minimal, file: "election:\n  fencing_offset: 1.5\n", key: "election.fencing_offset"},
		{name: "mapping for a scalar key", args: minimal, file: "http:\n  addr:\n    port: 1\n", key: "http.addr"},
		{name: "list for a scalar key", args: minimal, file: "http:\n  addr: [a, b]\n", key: "http.addr"},
		{name: "list of lists", args: []string{"--election.path", "/x"}, file: "zookeeper:\n  servers: [[a:1]]\n", key: "zookeeper.servers"},
	} {
		t.Run(c.name, func(t *testing.T) { checkBad(t, c) })
	}
}

// Issue 14: ids and advertise data with control characters were accepted
// and served raw by /leader?format=text; ids near 2 MB never joined.
func TestBadIDsNameTheKey(t *testing.T) {
	for _, c := range []badCase{
		{name: "newline in env", args: minimal, env: map[string]string{"ELECTD_ID": "web-1\nleader: evil"}, key: "id"},
		{name: "ESC in flag", args: with("--id", "web-1\x1b[2J"), key: "id"},
		{name: "NUL in YAML", args: minimal, file: "id: \"web\\0-1\"\n", key: "id"},
		{name: "C1 in YAML", args: minimal, file: "id: \"web\\x85-1\"\n", key: "id"},
		{name: "2 MB from env", args: minimal, env: map[string]string{"ELECTD_ID": strings.Repeat("a", 2<<20)}, key: "id"},
		{name: "from $POD_NAME", args: minimal, env: map[string]string{"POD_NAME": "web\x07"}, key: "id"},
		{name: "advertise with newline", args: with("--advertise", "10.0.0.7\n:8080"), key: "advertise"},
		{name: "advertise too long", args: with("--advertise", strings.Repeat("a", 4097)), key: "advertise"},
	} {
		t.Run(c.name, func(t *testing.T) { checkBad(t, c) })
	}
}

func TestSecretsStayOutOfErrors(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		with("--zookeeper.auth", "hunter2"),
		with("--zookeeper.auth", "u:hunter2\x1b"),
		with("--zookeeper.auth_file", writeFile(t, "auth", "hunter2")),
		with("--http.admin_token", "hunter2\x00"),
		with("--http.admin_token_file", writeFile(t, "token", "hunter2\x07")),
	} {
		_, err := loadArgs(t, args...)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error %v", args, err)
		}
	}
}

// Issue 33: a zookeeper.servers host with white space or a control
// character, or that is neither a DNS name nor an IP literal, is refused,
// quoted with its escapes; the hosts a deployment uses pass.
func TestServerHostsAreHosts(t *testing.T) {
	for _, c := range []badCase{
		{name: "space", file: "zookeeper: {servers: ['a b:2181']}\nelection: {path: /x}\n", key: "zookeeper.servers"},
		{name: "control characters", env: map[string]string{"ELECTD_ZOOKEEPER_SERVERS": "\x7f\x01:1"}, args: []string{"--election.path", "/x"}, key: "zookeeper.servers"},
		{name: "tab", args: with("--zookeeper.servers", "zk\t0:2181"), key: "zookeeper.servers"},
		{name: "punctuation", args: with("--zookeeper.servers", "zk!:2181"), key: "zookeeper.servers"},
		{name: "a label starting with -", args: with("--zookeeper.servers", "-zk:2181"), key: "zookeeper.servers"},
		{name: "an empty label", args: with("--zookeeper.servers", "zk..svc:2181"), key: "zookeeper.servers"},
		{name: "a label past 63 bytes", args: with("--zookeeper.servers", strings.Repeat("z", 64)+":2181"), key: "zookeeper.servers"},
		{name: "not ASCII", args: with("--zookeeper.servers", "zöo:2181"), key: "zookeeper.servers"},
	} {
		t.Run(c.name, func(t *testing.T) { checkBad(t, c) })
	}
	cleanEnv(t)
	t.Setenv("ELECTD_ZOOKEEPER_SERVERS", "\x7f\x01:1")
	if _, err := loadArgs(t, "--election.path", "/x"); err == nil || !strings.Contains(err.Error(), `"\x7f\x01:1"`) {
		t.Errorf("error %v, want the value quoted with its escapes", err)
	}
	cleanEnv(t)
	for _, s := range []string{"zk-0.zk-hs.apps.svc.cluster.local:2181", "zk_1:2181", "zk.:2181", "127.0.0.1:2181",
		"[::1]:2181", "[fe80::1%eth0]:2181", "localhost:2181"} {
		if _, err := loadArgs(t, with("--zookeeper.servers", s)...); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
