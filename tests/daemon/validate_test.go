package daemon

import (
	"strings"
	"testing"

	"github.com/electd/electd/tests/harness/electdtest"
)

// Issue 32: what --validate refuses on the real binary, each from the
// source a user would write it in. Every case exits 2 with stdout empty
// and one line per error, "electd: KEY: ...", saying what it must.
func TestValidateRefusesWhatIssue32Found(t *testing.T) {
	base := []string{"--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/services/web"}
	peerKey := electdtest.PeerKey("/services/web")
	on := func(more ...string) []string {
		return append(append(append([]string{}, base...), "--proxy.listen", "127.0.0.1:4041", "--proxy.peer_key", peerKey), more...)
	}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		file string
		want []string // one line each: "KEY: what it says"
	}{
		{name: "a proxy sent to itself", args: on("--proxy.app", "127.0.0.1:4041"),
			want: []string{`proxy.app: "127.0.0.1:4041" is this electd's own proxy.listen ("127.0.0.1:4041"): the proxy would send every request to itself`}},
		{name: "a proxy sent to itself as localhost", args: on("--proxy.app", "localhost:4041"),
			want: []string{`proxy.app: "localhost:4041" is this electd's own proxy.listen`}},
		{name: "a proxy sent to its peer port, from the environment",
			env:  []string{"ELECTD_PROXY_LISTEN=:4041", "ELECTD_PROXY_APP=127.0.0.1:4042", "ELECTD_PROXY_PEER_KEY=" + peerKey, "POD_IP=10.0.0.7"},
			args: base, want: []string{`proxy.app: "127.0.0.1:4042" is this electd's own proxy.peer_listen (":4042")`}},
		{name: "a proxy without a peer key", args: append(append([]string{}, base...), "--proxy.listen", "127.0.0.1:4041", "--proxy.app", "127.0.0.1:8080"),
			want: []string{"proxy.peer_key: required with proxy.listen: the secret every participant's proxy shares to authenticate the others; " +
				"set --proxy.peer_key, ELECTD_PROXY_PEER_KEY or proxy.peer_key_file to the same value on every participant, " +
				"e.g. the output of `openssl rand -base64 32`"}},
		{name: "proxy keys without proxy.listen, from every source",
			env:  []string{"ELECTD_PROXY_MODE=tcp"},
			args: append(append([]string{}, base...), "--proxy.hold_time", "10s"),
			file: "proxy:\n  max_held: 10\n  app: 127.0.0.1:8080\n",
			want: []string{
				"proxy.mode: only meaningful with proxy.listen (the proxy is off)",
				"proxy.app: only meaningful with proxy.listen (the proxy is off)",
				"proxy.hold_time: only meaningful with proxy.listen (the proxy is off)",
				"proxy.max_held: only meaningful with proxy.listen (the proxy is off)",
			}},
		{name: "a relation between proxy keys, in keys",
			args: on("--proxy.app", "127.0.0.1:8080", "--proxy.hold_time", "1s", "--proxy.drain_timeout", "1s", "--proxy.max_connections", "10", "--proxy.max_held", "11"),
			want: []string{
				"proxy.drain_timeout: 1s is not less than proxy.hold_time (1s)",
				"proxy.max_held: 11 is more than proxy.max_connections (10)",
			}},
		{name: "one of two values", args: append(append([]string{}, base...), "--log.format", "txt"),
			want: []string{`log.format: "txt" is not json or text`}},
		{name: "a misspelt key in a file", args: base, file: "zookeeper:\n  session_timout: 5s\nelecton:\n  mode: race\n",
			want: []string{
				"electon: unknown key in the configuration file; did you mean election?",
				"zookeeper.session_timout: unknown key in the configuration file; did you mean zookeeper.session_timeout?",
			}},
		{name: "a misspelt flag", args: append(append([]string{}, base...), "--zookeeper.session_timout", "5s"),
			want: []string{"--zookeeper.session_timout: unknown flag; did you mean --zookeeper.session_timeout? (see --help)"}},
		{name: "a misspelt variable", env: []string{"ELECTD_HTTP_ADMIN_TOKEN_FIEL=/run/secrets/token"}, args: base,
			want: []string{"ELECTD_HTTP_ADMIN_TOKEN_FIEL: unknown environment variable; did you mean ELECTD_HTTP_ADMIN_TOKEN_FILE (http.admin_token_file)?"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{}, c.args...)
			if c.file != "" {
				args = append([]string{"--config", writeConfig(t, c.file)}, args...)
			}
			status, stdout, stderr := electdtest.Run(t, c.env, append(args, "--validate")...).Outcome()
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if status != 2 || stdout != "" || len(lines) != len(c.want) {
				t.Fatalf("status %d, stdout %q, stderr:\n%s\nwant 2, nothing, and %d lines:\n%s", status, stdout, stderr, len(c.want), strings.Join(c.want, "\n"))
			}
			for i, want := range c.want {
				if !strings.HasPrefix(lines[i], "electd: "+want) {
					t.Errorf("line %d:\n%s\nwant it to start with\nelectd: %s", i+1, lines[i], want)
				}
			}
		})
	}
}

// A variable that Kubernetes injects for a Service named electd is no
// slip: it only warns, and the configuration validates.
func TestValidateServiceLinksOnlyWarn(t *testing.T) {
	env := []string{"ELECTD_PORT=tcp://10.0.0.1:4040", "ELECTD_PORT_4040_TCP_ADDR=10.0.0.1", "ELECTD_SERVICE_HOST=10.0.0.1"}
	status, stdout, stderr := electdtest.Run(t, env, "--zookeeper.servers", "127.0.0.1:2181", "--election.path", "/x", "--validate").Outcome()
	if status != 0 || !strings.Contains(stdout, `path: "/x"`) || strings.Count(stderr, "ignoring unknown environment variable") != len(env) {
		t.Errorf("status %d, stderr:\n%s\nwant 0 and a warning for each of %v", status, stderr, env)
	}
}
